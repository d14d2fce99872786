#pragma once
// The lock of a shape's results as another tune holds it while it runs: flock on <shape>.lock, its
// pid inside, for as long as the object lives.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace tune::test {

struct HeldLock {
  explicit HeldLock(const std::filesystem::path& results) {
    std::filesystem::create_directories(results.parent_path());
    fd = open(std::filesystem::path(results).replace_extension(".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    EXPECT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
    const std::string pid = std::to_string(getpid()) + "\n";
    EXPECT_EQ(write(fd, pid.data(), pid.size()), static_cast<ssize_t>(pid.size()));
  }
  ~HeldLock() { close(fd); }
  HeldLock(const HeldLock&) = delete;
  HeldLock& operator=(const HeldLock&) = delete;
  int fd = -1;
};

}  // namespace tune::test
