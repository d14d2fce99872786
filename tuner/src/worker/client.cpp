// The orchestrator's side of the worker: starts the process, sends requests, reads replies and
// tells how a lost worker ended (see tune/worker_client.hpp).
#include "tune/worker_client.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "tune/errors.hpp"
#include "tune/problem.hpp"
#include "tune/stop.hpp"
#include "worker/codec.hpp"

extern char** environ;

namespace tune {

using Json = nlohmann::ordered_json;

namespace {

using Clock = std::chrono::steady_clock;

// The problem as every process started finds it: its problem file by absolute path. A name is
// resolved here, on this process's problem path (--problem-path, $TUNE_PROBLEM_PATH, the built-ins),
// which a worker does not inherit (issue 34 #2). Throws InputError for an unknown problem.
std::string problem_file(const std::string& spec) {
  std::error_code ec;
  const std::filesystem::path file = find_problem(spec).file();
  const auto absolute = std::filesystem::absolute(file, ec);
  return (ec ? file : absolute).string();
}

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : p.string();
}

}  // namespace

std::string signal_name(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:  // a run's stop ("interrupted by SIGINT"), as the two below
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGTRAP:
      return "SIGTRAP";
    default:
      return "signal " + std::to_string(signal);
  }
}

WorkerProcess::WorkerProcess(const WorkerInit& init) {
  const std::string problem = problem_file(init.problem);  // before anything is started
  int requests[2], replies[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, requests) != 0 || pipe2(replies, O_CLOEXEC) != 0)
    throw DeviceError(fmt::format("cannot create the worker's pipes ({})", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, requests[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, replies[1], STDOUT_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults, empty;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigemptyset(&empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  const std::string parent = std::to_string(getpid());
  // Directly: /proc/self/exe. Under a launcher (compute-sanitizer ...): the launcher, then this
  // binary by its real path (/proc/self/exe would name the launcher there).
  std::vector<std::string> args = init.launcher;
  const std::string exe = init.launcher.empty() ? std::string("/proc/self/exe") : self_exe();
  args.push_back(init.launcher.empty() ? std::string("tune") : exe);
  args.push_back(kWorkerCommand);
  args.push_back(parent);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = posix_spawn(&pid_, init.launcher.empty() ? exe.c_str() : init.launcher.front().c_str(), &actions, &attr,
                             argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(requests[1]);
  close(replies[1]);
  request_fd_ = requests[0];
  reply_fd_ = replies[0];
  replies_ = PipeReader(reply_fd_);
  if (rc != 0) {
    pid_ = -1;
    close(request_fd_);
    close(reply_fd_);
    throw DeviceError(fmt::format("cannot start the worker process ({})", std::strerror(rc)));
  }
  // posix_spawn returns once the child has exec'd; its main thread takes the niceness before it
  // starts threads or the worker (a launcher's child inherits it; exec keeps the pid).
  if (init.nice > 0) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(pid_), init.nice);
  Json request{{"op", "init"},      {"problem", problem},    {"shape", shape_to_json(init.shape)},
               {"seed", init.seed}, {"device", init.device}, {"reference_timeout_s", reference_timeout_s()}};
  if (!init.reference) request["reference"] = false;
  if (init.max_smem_per_block > 0) request["max_smem_per_block"] = init.max_smem_per_block;
  if (init.reference && init.check_reference) request["check_reference"] = true;
  if (!init.sanitizer_tool.empty()) {
    request["sanitizer_tool"] = init.sanitizer_tool;
    request["sanitizer_log"] = init.sanitizer_log;
  }
  send(request);
}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0) {
    send({{"op", "quit"}});
    int status = 0;
    bool reaped = false;
    for (int i = 0; i < 100 && !reaped; ++i) {  // up to 1 s to leave cleanly
      reaped = waitpid(pid_, &status, WNOHANG) == pid_;
      if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!reaped) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  if (request_fd_ >= 0) close(request_fd_);
  if (reply_fd_ >= 0) close(reply_fd_);
}

void WorkerProcess::send(const Json& request, const std::vector<const std::vector<char>*>& attachments) {
  if (pid_ <= 0) return;
  std::string text = request.dump() + "\n";
  for (const auto* a : attachments) text.append(a->data(), a->size());
  for (std::size_t done = 0; done < text.size();) {
    // MSG_NOSIGNAL: a dead worker is an error return here, never a SIGPIPE for the orchestrator.
    const ssize_t n = ::send(request_fd_, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the worker is gone; the reply read says how
    done += static_cast<std::size_t>(n);
  }
}

FaultRecord WorkerProcess::reap(bool timed_out, double deadline_s) {
  FaultRecord f;
  f.phase = last_phase_;
  f.deadline_s = deadline_s;
  if (timed_out) kill(pid_, SIGKILL);
  int status = 0;
  // End of file without an exit is possible for a moment; a stuck half-dead worker is killed.
  for (int i = 0; i < 200 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (waitpid(pid_, &status, WNOHANG) == 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  if (timed_out) {
    f.kind = FaultKind::kTimeout;
  } else if (WIFSIGNALED(status)) {
    f.kind = FaultKind::kSignal;
    f.signal = signal_name(WTERMSIG(status));
  } else {
    f.kind = FaultKind::kExit;
    f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return f;
}

std::optional<std::string> WorkerProcess::next_line(PipeReader::Clock::time_point deadline, bool* timed_out,
                                                    const std::string& stop_during) {
  if (stop_during.empty()) return replies_.line(deadline, timed_out);
  // In slices, so that a stop is seen within a fifth of a second, not when the worker answers.
  constexpr auto kSlice = std::chrono::milliseconds(200);
  for (;;) {
    const auto now = PipeReader::Clock::now();
    const bool last = deadline - now <= kSlice;
    bool slice_out = false;
    auto line = replies_.line(last ? deadline : now + kSlice, &slice_out);
    if (line || !slice_out || last) {
      *timed_out = slice_out;
      return line;
    }
    if (stop_requested()) {
      kill(pid_, SIGKILL);  // its reference.py dies with it (PR_SET_PDEATHSIG)
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = -1;
      throw_if_stopped(stop_during);
    }
  }
}

WorkerAnswer<Json> WorkerProcess::receive(double deadline_s, const std::string& stop_during) {
  // One point in time for every line of the reply: a deadline that passes between two lines has
  // expired, it does not turn into a wait without end.
  const auto deadline = deadline_after(deadline_s);
  for (;;) {
    bool timed_out = false;
    const auto line = pid_ > 0 ? next_line(deadline, &timed_out, stop_during) : std::nullopt;
    if (!line) {
      WorkerAnswer<Json> lost;
      if (pid_ > 0) lost.fault = reap(timed_out, deadline_s);
      return lost;
    }
    Json j;
    try {
      j = Json::parse(*line);
    } catch (const Json::parse_error&) {
      continue;  // not ours (the worker's stdout goes to stderr, so this should not happen)
    }
    if (j.contains("phase")) {
      last_phase_ = j.at("phase").get<std::string>();
      last_item_ = j.value("item", -1);
      continue;
    }
    return {std::move(j)};
  }
}

std::string WorkerProcess::wait_ready(double deadline_s, bool stoppable) {
  const auto [r, fault, culprit] =
      receive(deadline_s, stoppable ? "starting the worker (it runs the problem's reference.py first)" : "");
  if (!r)
    throw DeviceError(fault.kind == FaultKind::kTimeout
                          ? fmt::format("the worker process did not start within {} s", deadline_s)
                      : fault.kind == FaultKind::kSignal
                          ? "the worker process was killed by " + fault.signal + " while starting"
                          : fmt::format("the worker process exited with code {} while starting", fault.exit_code));
  if (r->value("reply", "") != "ready") {
    const std::string message = r->value("message", "the worker process could not start");
    if (r->value("input_error", false)) throw InputError(message);
    throw DeviceError(message);
  }
  init_seconds_.clear();
  if (r->contains("init_s") && r->at("init_s").is_object())
    for (const auto& [part, s] : r->at("init_s").items())
      if (s.is_number()) init_seconds_.emplace_back(part, s.get<double>());
  return r->value("reference", "");
}

WorkerAnswer<HarnessFloor> WorkerProcess::measure_floor(double deadline_s) {
  send({{"op", "floor"}});
  auto [r, fault, culprit] = receive(deadline_s);
  if (!r) return {std::nullopt, std::move(fault), culprit};
  if (r->value("reply", "") != "floor") throw DeviceError(r->value("message", "the worker could not measure the floor"));
  return {harness_floor_from_json(r->at("floor"))};
}

WorkerAnswer<Json> WorkerProcess::call(const char* op, const std::vector<WorkerItem>& items, const Json& extra,
                                       double deadline_s) {
  Json list = Json::array();
  for (const auto& it : items)
    list.push_back({{"cubin_bytes", it.compiled->cubin.size()},
                    {"lowered_names", it.compiled->lowered_names},
                    {"lowered", lowered_json(*it.lowered)},
                    {"record", to_json(*it.record)}});
  last_phase_.clear();
  last_item_ = -1;
  std::vector<const std::vector<char>*> attachments;
  for (const auto& it : items) attachments.push_back(&it.compiled->cubin);
  Json request{{"op", op}, {"items", list}};
  for (const auto& [k, v] : extra.items()) request[k] = v;
  send(request, attachments);
  WorkerAnswer<Json> answer = receive(deadline_s);
  answer.culprit = items.size() == 1 ? 0 : last_item_;
  if (!answer.reply || answer.reply->value("reply", "") != "error") return answer;
  // The worker could not go on with these variants (an exception): stop it, report like a loss.
  answer.fault.kind = FaultKind::kError;
  answer.fault.phase = last_phase_;
  answer.fault.deadline_s = deadline_s;
  answer.fault.message = answer.reply->value("message", "the worker answered out of turn");
  last_error_input_ = answer.reply->value("input_error", false);
  answer.reply.reset();
  kill(pid_, SIGKILL);
  reap(false, deadline_s);
  return answer;
}

WorkerProcess::RunReply WorkerProcess::run(const char* op, const std::vector<WorkerItem>& items,
                                           const DeviceRunner::Options& options, double deadline_s) {
  auto [r, fault, culprit] = call(op, items, {{"options", options_json(options)}}, deadline_s);
  RunReply reply;
  reply.fault = std::move(fault);
  reply.culprit = culprit;
  if (!r) return reply;
  const Json& records = r->at("records");
  for (std::size_t i = 0; i < items.size(); ++i) *items[i].record = variant_from_json(records.at(i));
  reply.exiting = r->value("exiting", false);
  reply.ok = true;
  return reply;
}

int WorkerProcess::quit(double deadline_s) {
  if (pid_ <= 0) return -1;
  send({{"op", "quit"}});
  int status = 0;
  const auto deadline = deadline_after(deadline_s);
  bool reaped = false;
  while (!(reaped = waitpid(pid_, &status, WNOHANG) == pid_) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!reaped) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  if (!reaped) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace tune
