#pragma once
// Phase marks for timeline experiments: TUNE_CONTACT_MARK(k) at the end of phase k (0 start,
// 1 loads landed, 2 LayerNorm done, 3 MLP done); no code unless the includer defines it before
// including any contact header (bench/src/contact_phases.cu does).
#ifndef TUNE_CONTACT_MARK
#define TUNE_CONTACT_MARK(phase)
#endif
