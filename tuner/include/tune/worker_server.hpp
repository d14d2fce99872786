#pragma once
// The worker process's entry: what `tune __worker` (kWorkerCommand, tune/worker_protocol.hpp) runs.
// It owns the GPU context, so a variant that segfaults, aborts, poisons its context or hangs costs
// its own record, never the run; the orchestrator's side is tune/worker_client.hpp.

namespace tune {

// The worker's main loop (tune __worker PARENT_PID): serves requests from stdin until quit or end of
// file. Returns its exit code.
int run_worker(int argc, char** argv);

}  // namespace tune
