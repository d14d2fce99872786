#pragma once
// Typed errors. Every error that reaches a user is one line saying what was wrong and what to do.
#include <stdexcept>
#include <string>

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

// The device cannot run the job (not enough memory, no device when one is required).
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tune
