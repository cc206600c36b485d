// A decoder-only transformer described by its sizes on the command line ("decoder:layers=32,hidden=4096,...")
// and built by the architecture grammar's `decoder` operation (lib/zoo/arch.cpp, docs/models.md).
#include <fmt/format.h>

#include <charconv>
#include <string>

#include "dlscale/error.hpp"
#include "dlscale/zoo.hpp"

namespace dlscale {
namespace {
constexpr std::string_view kPrefix = "decoder:";
constexpr std::string_view kKeys =
    "layers, hidden, heads, kv_heads, ffn, vocab, seq, ffn_kind, positions, context, tied, bias, norm, window, experts, top_k, "
    "expert_ffn, shared_experts, first_dense, attention, q_lora, kv_lora, qk_nope, qk_rope, v_head";

std::int64_t positive_value(std::string_view key, std::string_view value, std::string_view option) {
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() || v < 1)
    throw InputError(SourceLocation{}, std::string(option),
                     fmt::format("decoder key '{}': '{}' is not a whole number ≥ 1", key, value));
  return v;
}

bool boolean_value(std::string_view key, std::string_view value, std::string_view option) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw InputError(SourceLocation{}, std::string(option), fmt::format("decoder key '{}': '{}' is not true or false", key, value));
}

std::string choice_value(std::string_view key, std::string_view value, std::initializer_list<std::string_view> allowed,
                         std::string_view option) {
  for (auto a : allowed)
    if (value == a) return std::string(value);
  throw InputError(SourceLocation{}, std::string(option),
                   fmt::format("decoder key '{}': '{}' is not one of {}", key, value, fmt::join(allowed, ", ")));
}
/// Eq. P16's keys: top_k in [1, experts], none of them without experts, first_dense below the layers.
void check_experts(const DecoderShape& d, std::string_view option) {
  auto fail = [&](std::string message) { throw InputError(SourceLocation{}, std::string(option), std::move(message)); };
  if (d.experts == 0) {
    for (auto [key, v] : {std::pair{"top_k", d.top_k},
                          {"expert_ffn", d.expert_ffn},
                          {"shared_experts", d.shared_experts},
                          {"first_dense", d.first_dense}})
      if (v > 0) fail(fmt::format("decoder key '{}' needs 'experts' (a mixture of experts)", key));
    return;
  }
  if (d.top_k == 0) fail("decoder key 'experts' needs 'top_k', the experts each token runs");
  if (d.top_k > d.experts) fail(fmt::format("decoder key 'top_k': {} is more than the {} experts", d.top_k, d.experts));
  if (d.first_dense >= d.layers)
    fail(fmt::format("decoder key 'first_dense': {} leaves none of the {} layers a mixture of experts", d.first_dense, d.layers));
}

/// Multi-head latent attention's keys (attention=mla): whether `key` is one of them, read into d.
bool mla_key(DecoderShape& d, std::string_view key, std::string_view value, std::string_view option) {
  if (key == "attention") d.attention = choice_value(key, value, {"gqa", "mla"}, option);
  else if (key == "q_lora") d.q_lora = positive_value(key, value, option);
  else if (key == "kv_lora") d.kv_lora = positive_value(key, value, option);
  else if (key == "qk_nope") d.qk_nope = positive_value(key, value, option);
  else if (key == "qk_rope") d.qk_rope = positive_value(key, value, option);
  else if (key == "v_head") d.v_head = positive_value(key, value, option);
  else return false;
  return true;
}

/// attention=mla needs kv_lora, qk_nope, qk_rope and v_head and has no kv_heads; its keys need it.
void check_mla(const DecoderShape& d, std::string_view option) {
  auto fail = [&](std::string message) { throw InputError(SourceLocation{}, std::string(option), std::move(message)); };
  const std::pair<const char*, std::int64_t> keys[] = {
      {"q_lora", d.q_lora}, {"kv_lora", d.kv_lora}, {"qk_nope", d.qk_nope}, {"qk_rope", d.qk_rope}, {"v_head", d.v_head}};
  if (d.attention != "mla") {
    for (auto [key, v] : keys)
      if (v > 0) fail(fmt::format("decoder key '{}' needs 'attention=mla' (multi-head latent attention)", key));
    return;
  }
  if (d.kv_heads > 0) fail("decoder key 'kv_heads': multi-head latent attention has no key/value heads of its own");
  for (auto [key, v] : keys)
    if (v == 0 && std::string_view(key) != "q_lora")
      fail(fmt::format("decoder key 'attention': multi-head latent attention needs '{}'", key));
}
}  // namespace

bool is_decoder_spec(std::string_view text) noexcept { return text.substr(0, kPrefix.size()) == kPrefix; }

DecoderShape parse_decoder_spec(std::string_view text, std::string_view option) {
  if (!is_decoder_spec(text))
    throw InputError(SourceLocation{}, std::string(option),
                     fmt::format("'{}' is not a decoder spec (decoder:key=value,...)", text));
  DecoderShape d;
  std::string_view rest = text.substr(kPrefix.size());
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw InputError(SourceLocation{}, std::string(option),
                       fmt::format("decoder spec item '{}' is not key=value (keys: {})", item, kKeys));
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "layers") d.layers = positive_value(key, value, option);
    else if (key == "hidden") d.hidden = positive_value(key, value, option);
    else if (key == "heads") d.heads = positive_value(key, value, option);
    else if (key == "kv_heads") d.kv_heads = positive_value(key, value, option);
    else if (key == "ffn") d.ffn = positive_value(key, value, option);
    else if (key == "vocab") d.vocab = positive_value(key, value, option);
    else if (key == "seq") d.seq = positive_value(key, value, option);
    else if (key == "context") d.context = positive_value(key, value, option);
    else if (key == "ffn_kind") d.ffn_kind = choice_value(key, value, {"swiglu", "gelu"}, option);
    else if (key == "positions") d.positions = choice_value(key, value, {"rotary", "alibi", "learned"}, option);
    else if (key == "tied") d.tied = boolean_value(key, value, option);
    else if (key == "bias") d.bias = boolean_value(key, value, option);
    else if (key == "norm") d.norm = choice_value(key, value, {"rmsnorm", "layernorm"}, option);
    else if (key == "window") d.window = positive_value(key, value, option);
    else if (key == "experts") d.experts = positive_value(key, value, option);
    else if (key == "top_k") d.top_k = positive_value(key, value, option);
    else if (key == "expert_ffn") d.expert_ffn = positive_value(key, value, option);
    else if (key == "shared_experts") d.shared_experts = positive_value(key, value, option);
    else if (key == "first_dense") d.first_dense = positive_value(key, value, option);
    else if (mla_key(d, key, value, option)) continue;
    else throw InputError(SourceLocation{}, std::string(option), fmt::format("unknown decoder key '{}' (keys: {})", key, kKeys));
  }
  for (auto [key, v] : {std::pair{"layers", d.layers},
                        {"hidden", d.hidden},
                        {"heads", d.heads},
                        {"ffn", d.ffn},
                        {"vocab", d.vocab},
                        {"seq", d.seq}})
    if (v == 0)
      throw InputError(SourceLocation{}, std::string(option), fmt::format("decoder spec needs '{}' (keys: {})", key, kKeys));
  if (d.heads % (d.kv_heads > 0 ? d.kv_heads : d.heads) != 0)
    throw InputError(SourceLocation{}, std::string(option),
                     fmt::format("decoder key 'kv_heads': {} key/value heads do not divide {} heads", d.kv_heads, d.heads));
  check_mla(d, option);
  if (d.attention != "mla" && d.hidden % d.heads != 0)
    throw InputError(SourceLocation{}, std::string(option),
                     fmt::format("decoder key 'heads': {} heads do not divide the hidden width {}", d.heads, d.hidden));
  check_experts(d, option);
  if (d.positions == "learned" && d.context > 0 && d.seq > d.context)
    throw InputError(SourceLocation{}, std::string(option),
                     fmt::format("decoder key 'seq': {} tokens do not fit the {} learned positions "
                                 "('context')",
                                 d.seq, d.context));
  return d;
}

namespace {
/// The decoder operation's mixture-of-experts settings (eq. P16), "" for a dense decoder.
std::string experts_yaml(const DecoderShape& d) {
  if (d.experts == 0) return "";
  return fmt::format(", experts: {}, top_k: {}, expert_ffn: {}, shared_experts: {}, first_dense: {}", d.experts, d.top_k,
                     d.expert_ffn > 0 ? d.expert_ffn : d.ffn, d.shared_experts, d.first_dense);
}
/// The decoder operation's attention settings: kv_heads, or multi-head latent attention's.
std::string attention_yaml(const DecoderShape& d) {
  if (d.attention != "mla") return fmt::format("kv_heads: {}", d.kv_heads > 0 ? d.kv_heads : d.heads);
  return fmt::format("attention: mla, {}kv_lora: {}, qk_nope: {}, qk_rope: {}, v_head: {}",
                     d.q_lora > 0 ? fmt::format("q_lora: {}, ", d.q_lora) : "", d.kv_lora, d.qk_nope, d.qk_rope, d.v_head);
}
}  // namespace

Network build_decoder(const DecoderShape& d, const std::string& name) {
  const bool learned = d.positions == "learned";
  const std::string text = fmt::format(
      "name: {0}\n"
      "description: \"decoder: {1} layers, width {2}, {3} heads ({4} key/value), {5} MLP {6}, vocabulary {7}, "
      "sequence length {8}\"\n"
      "input: {{tokens: {8}}}\n"
      "layers:\n"
      "  - decoder: {{layers: {1}, width: {2}, heads: {3}, {16}, ffn: {6}, ffn_kind: {5}, vocab: {7}, "
      "positions: {9}, tied: {10}, bias: {11}{12}{13}{14}{15}}}\n",
      name, d.layers, d.hidden, d.heads, d.kv_heads > 0 ? d.kv_heads : d.heads, d.ffn_kind, d.ffn, d.vocab, d.seq, d.positions,
      d.tied, d.bias, learned ? fmt::format(", context: {}", d.context > 0 ? d.context : d.seq) : "", experts_yaml(d),
      d.norm.empty() ? "" : fmt::format(", norm: {}", d.norm), d.window > 0 ? fmt::format(", window: {}", d.window) : "",
      attention_yaml(d));
  Network net = build_network_from_string(text, name);
  net.name = name;
  return net;
}

}  // namespace dlscale
