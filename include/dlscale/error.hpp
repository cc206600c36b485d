// The error hierarchy of dlscale. Only `main` turns these into exit codes:
//   InputError (and UsageError) -> 2   bad file, key, unit, value or option
//   DeviceError, NotCompiled    -> 3   no usable GPU / a feature this build lacks
//   any other dlscale::Error    -> 1
#pragma once

#include <stdexcept>
#include <string>

namespace dlscale {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where in an input file something was found; line and column are 1-based, 0 when unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

/// Bad user input. what() is one line: "file:line:col: key 'a.b': message" (parts omitted when unknown).
/// Without a file, the key is a field as the library's structs call it ("batch_per_gpu", "compute.accumulate";
/// validate in predict.hpp) or the name a caller passed (resolve's `field`).
class InputError : public Error {
 public:
  InputError(SourceLocation where, std::string key, std::string message);
  explicit InputError(std::string message);

  [[nodiscard]] const SourceLocation& where() const noexcept { return where_; }
  [[nodiscard]] const std::string& key() const noexcept { return key_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  SourceLocation where_;
  std::string key_;
  std::string message_;
};

/// A command-line option that is wrong (names the option as the key). Thrown by lib/cli only, which also
/// turns an InputError about a field into the UsageError of the option that set it.
class UsageError : public InputError {
 public:
  UsageError(std::string option, std::string message);
};

/// A malformed unit string; carries no location. The YAML layer rethrows it as an InputError.
class UnitError : public Error {
 public:
  using Error::Error;
};

class DeviceError : public Error {
 public:
  using Error::Error;
};

/// A feature that this build of dlscale was compiled without (e.g. CUDA).
class NotCompiled : public Error {
 public:
  using Error::Error;
};

/// The process exit status that `main` uses for an exception.
int exit_code_for(const std::exception& e) noexcept;

}  // namespace dlscale
