#include "dlscale/error.hpp"

#include <fmt/format.h>

namespace dlscale {
namespace {
std::string compose(const SourceLocation& w, const std::string& key, const std::string& message) {
  std::string out;
  if (!w.file.empty()) {
    out = w.file;
    if (w.line > 0) out += fmt::format(":{}:{}", w.line, w.column);
    out += ": ";
  }
  if (!key.empty()) out += fmt::format("'{}': ", key);
  return out + message;
}
}  // namespace

InputError::InputError(SourceLocation where, std::string key, std::string message)
    : Error(compose(where, key, message)), where_(std::move(where)), key_(std::move(key)), message_(std::move(message)) {}

InputError::InputError(std::string message) : Error(message), message_(std::move(message)) {}

UsageError::UsageError(std::string option, std::string message)
    : InputError(SourceLocation{}, std::move(option), std::move(message)) {}

int exit_code_for(const std::exception& e) noexcept {
  if (dynamic_cast<const InputError*>(&e) != nullptr) return 2;
  if (dynamic_cast<const UnitError*>(&e) != nullptr) return 2;
  if (dynamic_cast<const DeviceError*>(&e) != nullptr) return 3;
  if (dynamic_cast<const NotCompiled*>(&e) != nullptr) return 3;
  return 1;
}

}  // namespace dlscale
