// The names of dlscale's enums, one table per type written beside the type, and the two functions every
// table gives: to_string(E) and enum_from_string<E>(name). A type gets its names by specialising
// EnumNames in its own header:
//   template <> struct EnumNames<CollectiveOp> {
//     static constexpr std::array<EnumName<CollectiveOp>, 2> names{{{CollectiveOp::allreduce, "allreduce"}, ...}};
//     static constexpr std::array<EnumName<CollectiveOp>, 0> aliases{};  // other spellings a reader accepts
//   };
// Each type keeps its own *_from_string wrapper, with its own error type and message.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

namespace dlscale {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

/// Specialised beside each enum that has names: `names` (one per value, the name printed) and `aliases`
/// (further spellings enum_from_string accepts; may be empty).
template <class E>
struct EnumNames;

template <class E>
concept NamedEnum = std::is_enum_v<E> && requires {
  EnumNames<E>::names;
  EnumNames<E>::aliases;
};

/// How enum_from_string compares a name with the table's.
enum class NameCase { exact, ignore_ascii_case };

namespace detail {
constexpr char ascii_lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

constexpr bool same_name(std::string_view a, std::string_view b, NameCase how) noexcept {
  if (how == NameCase::exact) return a == b;
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  return true;
}
}  // namespace detail

/// The name of `value` in its type's table; "" for a value the table lacks.
template <NamedEnum E>
[[nodiscard]] constexpr std::string_view to_string(E value) noexcept {
  for (const auto& n : EnumNames<E>::names)
    if (n.value == value) return n.name;
  return {};
}

/// The value whose name (or alias) is `name`; nothing when none is. The callers' *_from_string functions
/// turn nothing into their own error.
template <NamedEnum E>
[[nodiscard]] constexpr std::optional<E> enum_from_string(std::string_view name, NameCase how = NameCase::exact) noexcept {
  for (const auto& n : EnumNames<E>::names)
    if (detail::same_name(n.name, name, how)) return n.value;
  for (const auto& n : EnumNames<E>::aliases)
    if (detail::same_name(n.name, name, how)) return n.value;
  return std::nullopt;
}

}  // namespace dlscale
