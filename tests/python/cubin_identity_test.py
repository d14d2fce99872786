#!/usr/bin/env python3
"""tools/cubin_identity.py's readers since issue 35 (no NVRTC needed): the entries of a merged
header whose Shape holds a dtype variable, and a sampled variant of a record older than the
problem's dtype variable named as tune lowers it now (issue 38: tune lowers it, `tune export nvrtc
--all-variants`; the script keeps no rule of its own).

    cubin_identity_test.py REPO_DIR TUNE
"""
import argparse
import gzip
import json
import pathlib
import sys
import unittest

SRC = pathlib.Path(sys.argv[1])
TUNE = sys.argv[2]
sys.path.insert(0, str(SRC / "tools"))
import compare_builds  # noqa: E402
import cubin_identity  # noqa: E402

HEADER = """
inline constexpr Entry kEntries[kEntryCount] = {
    {"NVIDIA H200", 90, 132, false, "B4_N64_C64_H32_bfloat16", {4, 64, 64, 32, DType::bfloat16},
     0.0},
    {"NVIDIA H200", 90, 132, false, "B4_N64_C64_H32", {4, 64, 64, 32, DType::float32},
     0.0},
};
inline constexpr const void* kWinnerKernels[kEntryCount][kMaxLaunches] = {
    {reinterpret_cast<const void*>(&::contact_kernel<__nv_bfloat16,4,64>)},
    {reinterpret_cast<const void*>(&::contact_kernel<float,4,64>)},
};
inline constexpr const void* kBaselineKernels[kEntryCount][kMaxLaunches] = {
    {reinterpret_cast<const void*>(&::contact_kernel<__nv_bfloat16,4,1>)},
    {reinterpret_cast<const void*>(&::contact_kernel<float,4,1>)},
};
"""


class Readers(unittest.TestCase):
    def test_entries_whose_shape_holds_a_dtype_are_read(self):
        got = compare_builds.header_kernels(HEADER)
        self.assertEqual(got, [("B4_N64_C64_H32_bfloat16", "winner", ["contact_kernel<__nv_bfloat16,4,64>"]),
                               ("B4_N64_C64_H32_bfloat16", "baseline", ["contact_kernel<__nv_bfloat16,4,1>"]),
                               ("B4_N64_C64_H32", "winner", ["contact_kernel<float,4,64>"]),
                               ("B4_N64_C64_H32", "baseline", ["contact_kernel<float,4,1>"])])

    def test_a_sample_of_a_record_older_than_T_is_named_with_the_default_type(self):
        # A contact record older than T (the fixture: B1 N1024 C128 float32 as recorded before T,
        # its variants cut to 8) names its kernels contact_kernel<1,1024,...>.
        args = argparse.Namespace(results=str(SRC / "tests" / "fixtures" / "pre_t" / "h200"), sample_results=[], sample=3,
                                  kernel=[], seed="23", after=str(SRC), tune=TUNE)
        rows = [r for r in cubin_identity.sampled(args, "contact", set()) if r[0] == "B1_N1024_C128_H32"]
        self.assertEqual(len(rows), 3)
        for _, _, exprs, _, _ in rows:
            for e in exprs:
                self.assertTrue(e.startswith("contact_kernel<float,1,1024,"), e)
        # ... and the record keeps its own names: the sample is renamed, the file is not.
        doc = json.loads(gzip.decompress((SRC / "tests/fixtures/pre_t/h200/contact/B1_N1024_C128_H32.json.gz").read_bytes()))
        self.assertTrue(doc["variants"][0]["launches"][0]["kernel"].startswith("contact_kernel<1,1024,"))

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
