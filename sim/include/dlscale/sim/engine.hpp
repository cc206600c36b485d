// The discrete-event engine of the simulator, apart from any training model:
//   - an event queue with deterministic ordering: events fire by time, ties broken by the order in
//     which they were scheduled (a sequence number), so the same inputs and seed give the same run;
//   - a flow network: links of fixed capacity (bytes/s, one direction) shared by flows, each flow a
//     number of bytes over a path of links with an optional rate cap. Rates are the max-min fair
//     allocation, found by progressive filling and recomputed whenever a flow starts or ends.
//
// Time inside the engine is a double in seconds (the hot loop stays free of wrappers); the public
// simulator API speaks `Seconds`. A model drives the engine through `EventSink`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace dlscale::sim {

/// One scheduled event. `kind`, `a` and `b` belong to whoever scheduled it.
struct Event {
  double time = 0.0;  // seconds since the start of the simulation
  std::uint64_t seq = 0;
  std::uint32_t kind = 0;
  std::uint32_t a = 0;
  std::uint64_t b = 0;
};

/// The model side: receives its events and the completion of its flows.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_event(const Event& e) = 0;
  virtual void on_flow_done(std::uint64_t tag) = 0;
};

/// Events by (time, seq): equal times fire in scheduling order, so runs are deterministic. A binary
/// min-heap, beside FIFOs that each hold the events of one exact time: GPUs that run in lockstep
/// schedule thousands of events at a few instants, which a FIFO takes and gives back in O(1) and in
/// seq order (it receives them in that order), where the heap would sift each through log2(G) levels.
/// No two FIFOs share a time, so they are kept sorted by it; pop() takes the earlier of the first
/// FIFO's front and the heap's top, so the order is the one the heap alone would give.
///
/// The common cases stay inline (a push to the FIFO the last push went to, a pop from the first FIFO
/// when the heap is empty): with the GPUs in lockstep they are nearly every event, and a call with its
/// saved registers cost as much as the work.
class EventQueue {
 public:
  void push(double time, std::uint32_t kind, std::uint32_t a, std::uint64_t b) {
    const Event e{time, next_seq_++, kind, a, b};
    ++size_;
    if (last_ >= 0) {  // most pushes go where the previous one went
      Fifo& fl = fifo_[static_cast<std::size_t>(last_)];
      if (fl.time == time && fl.head < fl.tail && fl.tail < fl.events.size()) {
        fl.events[fl.tail++] = e;
        return;
      }
    }
    push_elsewhere(e);
  }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  Event pop() {
    if (heap_.empty() && !active_.empty()) {  // the first FIFO's front, unless it is its last event
      Fifo& fi = fifo_[static_cast<std::size_t>(active_.front())];
      if (fi.head + 1 < fi.tail) {
        --size_;
        return fi.events[fi.head++];
      }
    }
    return pop_any();
  }
  void reserve(std::size_t n) { heap_.reserve(n); }

 private:
  struct Fifo {  // events[head, tail) in seq order; events.size() is the room (append() grows it)
    double time = 0.0;
    std::vector<Event> events;
    std::size_t head = 0, tail = 0;
    void append(const Event& e) {
      if (tail == events.size()) events.resize(std::max<std::size_t>(64, 2 * events.size()));
      events[tail++] = e;
    }
  };
  static constexpr int kFifos = 64;
  void push_elsewhere(const Event& e);
  Event pop_any();
  void heap_push(const Event& e);
  Event heap_pop();
  std::vector<Event> heap_;
  std::vector<Fifo> fifo_ = std::vector<Fifo>(kFifos);
  std::vector<int> active_;  // FIFOs holding events, by time
  int last_ = -1;            // the FIFO the last push went to
  std::vector<int> free_ = initial_free();
  std::size_t size_ = 0;
  std::uint64_t next_seq_ = 0;
  static std::vector<int> initial_free() {
    std::vector<int> v;
    for (int i = kFifos; i-- > 0;) v.push_back(i);
    return v;
  }
};

using LinkId = std::uint32_t;
using FlowId = std::uint32_t;

struct LinkStats {
  std::string name;
  std::string kind;       // "nic-out", "nic-in", "gpu-out", "gpu-in", "pcie", "storage", …
  double capacity = 0.0;  // bytes/s
  double busy = 0.0;      // seconds with at least one flow
  double bytes = 0.0;     // bytes carried
};

/// Links and flows with max-min fair sharing (progressive filling).
class FlowNet {
 public:
  LinkId add_link(std::string name, std::string kind, double capacity_bytes_per_s);
  [[nodiscard]] std::size_t link_count() const noexcept { return links_.size(); }
  [[nodiscard]] const LinkStats& link(LinkId id) const { return links_[id].stats; }

  /// Starts a flow of `bytes` over `path` at time `now`; `cap` ≤ 0 means uncapped. `tag` comes back in
  /// EventSink::on_flow_done. A flow of zero bytes or an empty uncapped path completes at once.
  FlowId start(double now, double bytes, const std::vector<LinkId>& path, double cap, std::uint64_t tag);

  /// Moves every flow to `now` and returns the tags of the flows that have completed; then re-shares.
  void advance_to(double now, std::vector<std::uint64_t>& finished);
  /// Recomputes the max-min fair rates of the active flows (after start/finish).
  void reshare();
  /// The time at which the next active flow completes at the current rates (infinity if none).
  [[nodiscard]] double next_completion() const;
  [[nodiscard]] std::size_t active() const noexcept { return active_.size(); }
  [[nodiscard]] double rate(FlowId f) const { return flows_[f].rate; }

  /// Per-link rate samples for traces: called after each reshare when enabled.
  struct RateSample {
    double time;
    LinkId link;
    double rate;
  };
  void record_rates(bool on) { record_ = on; }
  [[nodiscard]] const std::vector<RateSample>& rate_samples() const noexcept { return samples_; }

 private:
  struct Link {
    LinkStats stats;
    double load = 0.0;       // sum of rates of active flows
    double remaining = 0.0;  // scratch: capacity left during filling
    std::uint32_t unfrozen = 0;
    std::uint32_t flows = 0;  // active flows crossing it
    bool touched = false;
  };
  struct Flow {
    double remaining = 0.0;
    double size = 0.0;
    double rate = 0.0;
    double cap = 0.0;
    std::uint64_t tag = 0;
    std::vector<LinkId> path;
    bool frozen = false;
  };
  std::vector<Link> links_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_;
  std::vector<FlowId> active_;
  std::vector<LinkId> scratch_links_;
  double now_ = 0.0;
  bool record_ = false;
  std::vector<RateSample> samples_;
};

/// The engine: an event queue, a clock, a flow network, and the loop that feeds a sink.
class Engine {
 public:
  explicit Engine(EventSink& sink) : sink_(&sink) {}

  [[nodiscard]] double now() const noexcept { return now_; }
  void schedule(double time, std::uint32_t kind, std::uint32_t a = 0, std::uint64_t b = 0) { queue_.push(time, kind, a, b); }
  FlowNet& net() noexcept { return net_; }
  [[nodiscard]] const FlowNet& net() const noexcept { return net_; }

  /// Starts a flow now; its completion reaches the sink's on_flow_done.
  void start_flow(double bytes, const std::vector<LinkId>& path, double cap, std::uint64_t tag);

  /// Runs until no event is left. Returns the number of events processed.
  std::uint64_t run();
  [[nodiscard]] std::uint64_t events() const noexcept { return events_; }
  void reserve(std::size_t n) { queue_.reserve(n); }

 private:
  static constexpr std::uint32_t kFlowWake = 0xFFFFFFFFu;
  void settle();

  EventSink* sink_;
  EventQueue queue_;
  FlowNet net_;
  double now_ = 0.0;
  std::uint64_t events_ = 0;
  std::uint64_t wake_generation_ = 0;
  bool dirty_ = false;
  std::vector<std::uint64_t> finished_;
};

}  // namespace dlscale::sim
