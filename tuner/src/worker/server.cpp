// The worker process: reads requests from the orchestrator and answers them, one JSON object per
// line each way (see tune/worker_protocol.hpp), on a backend (worker_backend.hpp).
#include "tune/worker_server.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <vector>

#include <fmt/format.h>

#include "tune/errors.hpp"
#include "tune/worker_protocol.hpp"
#include "worker/backend.hpp"
#include "worker/codec.hpp"

namespace tune {

using Json = nlohmann::ordered_json;

namespace {

class Worker {
 public:
  explicit Worker(int reply_fd)
      : reply_fd_(reply_fd),
        backend_(with_injected_faults(worker_fake_mode() ? make_fake_backend() : make_device_backend())) {
    backend_->on_phase([this](const std::string& phase, int item) { reply({{"phase", phase}, {"item", item}}); });
  }

  // Requests: a JSON line, then the raw bytes of its CUBINs (each item's "cubin_bytes"), read
  // straight from the pipe: hex in JSON through std::cin cost ~8 ms per variant.
  int serve() {
    while (const auto line = requests_.line()) {
      if (line->empty()) continue;
      Json request;
      try {
        request = Json::parse(*line);
        if (request.contains("items"))
          for (auto& item : request.at("items")) {
            std::vector<char> bytes(item.at("cubin_bytes").get<std::size_t>());
            if (!requests_.exact(bytes.data(), bytes.size())) return 0;  // the orchestrator is gone
            cubins_.push_back(std::move(bytes));
          }
        const auto op = request.at("op").get<std::string>();
        if (op == "quit") {
          backend_->quit();
          return 0;
        }
        if (op == "init")
          init(request);
        else if (op == "floor")
          floor();
        else if (op == "evaluate" || op == "remeasure")
          measure(op, request);
        else if (op == "gate")
          gate(request);
        else if (op == "sanitize")
          sanitize(request);
        else
          throw InputError("unknown request '" + op + "'");
      } catch (const InputError& e) {  // the user's to fix (a failing reference, ...): exit 2 in tune
        reply({{"reply", "error"}, {"message", e.what()}, {"input_error", true}});
      } catch (const std::exception& e) {
        reply({{"reply", "error"}, {"message", e.what()}});
      }
      if (exiting_) return 3;
    }
    return 0;  // the orchestrator closed the pipe
  }

 private:
  void reply(const Json& j) {
    const std::string text = j.dump() + "\n";
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = write(reply_fd_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) std::_Exit(5);  // the orchestrator is gone
      done += static_cast<std::size_t>(n);
    }
  }

  void init(const Json& r) {
    WorkerSetup s;
    if (r.contains("reference_timeout_s")) set_reference_timeout(r.at("reference_timeout_s").get<double>());
    problem_ = s.problem = &find_problem(r.at("problem").get<std::string>());
    s.shape = shape_from_json(r.at("shape"));
    shape_ = s.shape;
    s.seed = r.at("seed").get<std::uint64_t>();
    s.parity_seed = parity_seed_ = parity_seed_of(s.seed);
    s.device = r.at("device").get<int>();
    s.with_reference = r.value("reference", true);
    s.check_reference = r.value("check_reference", false);
    s.sanitizer_tool = r.value("sanitizer_tool", "");
    s.sanitizer_log = r.value("sanitizer_log", "");
    s.max_smem_per_block = r.value("max_smem_per_block", std::int64_t{0});
    const std::string how = backend_->init(s);
    Json parts = Json::object();
    for (const auto& [part, seconds] : backend_->init_seconds()) parts[part] = seconds;
    reply({{"reply", "ready"}, {"reference", how}, {"init_s", parts}});
  }

  void floor() { reply({{"reply", "floor"}, {"floor", to_json(backend_->floor())}}); }

  void measure(const std::string& op, const Json& r) {
    if (!problem_) throw InputError("init first");
    const DeviceRunner::Options options = options_from(r.at("options"));
    WorkerItems it = take_items(r);
    backend_->measure(it, options, op == "remeasure");
    Json out = Json::array();
    bool sticky = false;
    for (const auto& rec : it.records) {
      out.push_back(to_json(rec));
      sticky = sticky || (rec.fault && rec.fault->kind == FaultKind::kCudaError);
    }
    // A sticky error poisoned the context: report, then exit; the orchestrator starts a fresh worker.
    exiting_ = sticky;
    reply({{"reply", "records"}, {"records", out}, {"exiting", sticky}});
  }

  WorkerItems take_items(const Json& r) {
    WorkerItems out;
    for (const auto& item : r.at("items")) {
      CompileResult c;
      c.ok = true;
      c.cubin = std::move(cubins_.at(out.compiled.size()));
      c.lowered_names = item.at("lowered_names").get<std::vector<std::string>>();
      out.compiled.push_back(std::move(c));
      out.lowered.push_back(lowered_from(item.at("lowered")));
      out.records.push_back(variant_from_json(item.at("record")));
    }
    cubins_.clear();
    return out;
  }

  // The further inputs of the gate: each seed's data, then the edge cases of the parity data, the
  // draws side by side (each is parallel within itself too; issue 37).
  std::vector<WorkerGateInput> draw_gate_inputs(const std::vector<std::uint64_t>& seeds) const {
    const std::vector<std::string> edge_cases = problem_->edge_cases(shape_);
    std::vector<std::future<ProblemData>> drawing;
    for (const auto seed : seeds)
      drawing.push_back(
          std::async(std::launch::async, [this, seed] { return problem_->make_data(shape_, seed, DataPurpose::kParity); }));
    if (!edge_cases.empty())  // the parity data, drawn once for every edge case
      drawing.push_back(std::async(std::launch::async,
                                   [this] { return problem_->make_data(shape_, parity_seed_, DataPurpose::kParity); }));
    std::vector<ProblemData> drawn;
    for (auto& d : drawing) drawn.push_back(d.get());  // every draw ends before a failure is thrown on
    std::vector<WorkerGateInput> inputs;
    for (std::size_t i = 0; i < seeds.size(); ++i)
      inputs.push_back({fmt::format("seed {}", seeds[i]), seeds[i], std::move(drawn[i]), {}});
    for (const auto& name : edge_cases)
      inputs.push_back({name, parity_seed_, problem_->make_edge_case(shape_, drawn.back(), name), {}});
    return inputs;
  }

  // Each further input's float64 reference and module error, side by side (each may be a Python
  // process), here for every backend: a reference that fails on an edge case or a further seed (a
  // NaN on rows of zeros) stops a fake run too, as it stops a run on the device.
  void reference_gate_inputs(std::vector<WorkerGateInput>& inputs) const {
    const ReferenceBackend backend = reference_backend_from_env();
    std::vector<std::vector<double>> modules(inputs.size());
    std::vector<std::future<OutputValues>> refs;
    for (std::size_t k = 0; k < inputs.size(); ++k)
      refs.push_back(std::async(std::launch::async, [&, k] {
        const auto t = std::chrono::steady_clock::now();
        auto ref = problem_->reference(shape_, inputs[k].data, backend, nullptr, &modules[k]);
        inputs[k].reference_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
        return ref;
      }));
    for (auto& r : refs) r.wait();  // every reference ends before a failure is thrown on
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      inputs[k].reference = refs[k].get();
      inputs[k].module_error = module_error(modules[k], inputs[k].reference.values());
    }
  }

  // The gate's checks that need no sanitizer: parity on further inputs (seeds, then the problem's
  // edge cases at this shape) and determinism.
  void gate(const Json& r) {
    if (!problem_) throw InputError("init first");
    WorkerItems it = take_items(r);
    const Json& g = r.at("gate");
    const int rounds = g.at("rounds").get<int>();
    const auto t_draw = std::chrono::steady_clock::now();
    std::vector<WorkerGateInput> inputs = draw_gate_inputs(g.at("seeds").get<std::vector<std::uint64_t>>());
    const auto t_gate = std::chrono::steady_clock::now();
    reference_gate_inputs(inputs);
    if (g.value("check_reference", false) && !inputs.empty())
      problem_->check_reference_repeats(shape_, inputs.front().data, reference_backend_from_env(), inputs.front().reference);
    const std::vector<GateRecord> gates = backend_->gate(it, inputs, g.at("seeds").size(), rounds);
    const double gate_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_gate).count();
    const double draw_s = std::chrono::duration<double>(t_gate - t_draw).count();
    Json list = Json::array();
    for (std::size_t i = 0; i < it.records.size(); ++i) {
      it.records[i].gate = gates[i];
      list.push_back(to_json(it.records[i]));
    }
    double reference_s = 0;  // side by side: the slowest one's
    for (const auto& in : inputs) reference_s = std::max(reference_s, in.reference_s);
    reply({{"reply", "records"},
           {"records", list},
           {"reference_s", reference_s},
           {"draw_s", draw_s},
           {"launches_s", std::max(0.0, gate_s - reference_s)},
           {"exiting", false}});
  }

  // Under compute-sanitizer: one launch of each item on the parity data, nothing measured. A sticky
  // fault ends the request (the items after it are not run) and the worker.
  void sanitize(const Json& r) {
    if (!problem_) throw InputError("init first");
    WorkerItems it = take_items(r);
    Json results = Json::array();
    bool sticky = false;
    for (std::size_t i = 0; i < it.records.size(); ++i) {
      if (sticky) {
        results.push_back(Json{{"not_run", true}});
        continue;
      }
      WorkerBackend::Sanitized launch = backend_->sanitize(it, i);
      results.push_back(std::move(launch.result));
      sticky = launch.sticky;
    }
    exiting_ = sticky;
    reply({{"reply", "sanitized"}, {"results", results}, {"exiting", sticky}});
  }

  PipeReader requests_{STDIN_FILENO};
  std::vector<std::vector<char>> cubins_;  // the attachments of the request in hand
  int reply_fd_;
  std::unique_ptr<WorkerBackend> backend_;
  const Problem* problem_ = nullptr;
  Shape shape_;
  std::uint64_t parity_seed_ = 0;
  bool exiting_ = false;
};

// The parent of process `pid` (/proc/PID/stat's fourth field), -1 when unknown.
pid_t parent_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  char state = 0;
  int ppid = -1;
  return std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 ? ppid : -1;
}

}  // namespace

int run_worker(int argc, char** argv) {
  // Dies with the orchestrator (even by kill -9); Ctrl-C and SIGTERM (Slurm's scancel signals every
  // process of the job) are the orchestrator's to handle: it lets the variant in hand finish.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Started by the orchestrator, or by the compute-sanitizer it started (the gate), which may put
  // a process of its own in between.
  if (argc > 2) {
    const pid_t orchestrator = std::atoi(argv[2]);
    bool ours = false;
    for (pid_t p = getppid(), depth = 0; p > 1 && depth < 4 && !ours; p = parent_of(p), ++depth) ours = p == orchestrator;
    if (!ours) return 6;
  }
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  // Replies get the original stdout; anything else printed goes to stderr, not into the protocol.
  const int reply_fd = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  try {
    return Worker(reply_fd).serve();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune worker: %s\n", e.what());
    return 4;
  }
}

}  // namespace tune
