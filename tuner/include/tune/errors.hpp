#pragma once
// Typed errors. Every error that reaches a user is one line saying what was wrong and what to do.
#include <stdexcept>
#include <string>
#include <utility>

namespace tune {

// Bad input from the user (command line, config file, golden or result file, shape).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A search-space file that cannot be read or does not describe a valid space.
class ConfigError : public InputError {
 public:
  using InputError::InputError;
};

// A shape that is not positive, or that no variant of the template can take.
class ShapeError : public InputError {
 public:
  using InputError::InputError;
};

// Another tune holds the lock of a shape's results (ResultsLock): its pid as the lock file gives it
// ("?" when unknown). A sweep goes on with its other shapes and names this one at the end.
class ResultsHeldError : public InputError {
 public:
  ResultsHeldError(const std::string& what, std::string holder, std::string file)
      : InputError(what), holder_(std::move(holder)), file_(std::move(file)) {}
  [[nodiscard]] const std::string& holder() const { return holder_; }
  [[nodiscard]] const std::string& file() const { return file_; }  // the results file it writes

 private:
  std::string holder_, file_;
};

// The device cannot run the job (not enough memory, no device when one is required).
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tune
