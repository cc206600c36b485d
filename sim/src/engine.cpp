// The discrete-event engine: event queue and max-min fair flow network (see engine.hpp).
#include "dlscale/sim/engine.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <utility>

namespace dlscale::sim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// A flow whose remaining bytes fall below this fraction of its size has finished: the subtraction
// remaining − rate·dt leaves rounding residue of order 1e-16·size at the instant it should reach 0.
constexpr double kDoneFraction = 1e-12;

inline bool earlier(const Event& x, const Event& y) noexcept { return x.time < y.time || (x.time == y.time && x.seq < y.seq); }
}  // namespace

// ---- event queue -----------------------------------------------------------------------------------

// A push that does not go to the FIFO of the last push (push() in engine.hpp has counted it).
void EventQueue::push_elsewhere(const Event& e) {
  const double time = e.time;
  // the FIFO of this time, or where one would go among the active FIFOs (sorted by time)
  const auto at = std::lower_bound(active_.begin(), active_.end(), time,
                                   [&](int f, double t) { return fifo_[static_cast<std::size_t>(f)].time < t; });
  if (at != active_.end() && fifo_[static_cast<std::size_t>(*at)].time == time) {
    fifo_[static_cast<std::size_t>(*at)].append(e);  // a later seq than all it holds
    last_ = *at;
    return;
  }
  if (free_.empty()) {
    heap_push(e);
    return;
  }
  const int f = free_.back();
  free_.pop_back();
  Fifo& fi = fifo_[static_cast<std::size_t>(f)];
  fi.time = time;
  fi.head = fi.tail = 0;
  fi.append(e);
  active_.insert(at, f);
  last_ = f;
}

void EventQueue::heap_push(const Event& e) {
  heap_.push_back(e);
  // sift up
  std::size_t i = heap_.size() - 1;
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!earlier(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

// Every pop but the commonest (pop() in engine.hpp): the earlier of the first FIFO's front and the heap's top.
Event EventQueue::pop_any() {
  assert(size_ > 0);
  --size_;
  if (!active_.empty()) {
    Fifo& fi = fifo_[static_cast<std::size_t>(active_.front())];
    const Event& front = fi.events[fi.head];
    if (heap_.empty() || earlier(front, heap_.front())) {
      const Event e = front;
      if (++fi.head == fi.tail) {
        free_.push_back(active_.front());
        active_.erase(active_.begin());
      }
      return e;
    }
  }
  return heap_pop();
}

Event EventQueue::heap_pop() {
  assert(!heap_.empty());
  const Event top = heap_.front();
  const Event last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n > 0) {
    std::size_t i = 0;
    for (;;) {
      std::size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && earlier(heap_[child + 1], heap_[child])) ++child;
      if (!earlier(heap_[child], last)) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = last;
  }
  return top;
}

// ---- flow network ----------------------------------------------------------------------------------

LinkId FlowNet::add_link(std::string name, std::string kind, double capacity) {
  Link l;
  l.stats.name = std::move(name);
  l.stats.kind = std::move(kind);
  l.stats.capacity = capacity;
  links_.push_back(std::move(l));
  return static_cast<LinkId>(links_.size() - 1);
}

FlowId FlowNet::start(double now, double bytes, const std::vector<LinkId>& path, double cap, std::uint64_t tag) {
  FlowId id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
  f.remaining = bytes;
  f.size = bytes;
  f.rate = 0.0;
  f.cap = cap;
  f.tag = tag;
  f.path = path;
  f.frozen = false;
  (void)now;
  for (LinkId l : f.path) ++links_[l].flows;
  active_.push_back(id);
  return id;
}

void FlowNet::advance_to(double now, std::vector<std::uint64_t>& finished) {
  const double dt = now - now_;
  if (dt > 0.0) {
    for (LinkId l : scratch_links_) {
      Link& k = links_[l];
      if (k.load > 0.0) {
        k.stats.busy += dt;
        k.stats.bytes += k.load * dt;
      }
    }
  }
  now_ = now;
  std::size_t w = 0;
  for (std::size_t r = 0; r < active_.size(); ++r) {
    const FlowId id = active_[r];
    Flow& f = flows_[id];
    if (dt > 0.0) f.remaining -= f.rate * dt;
    const bool instant = f.size <= 0.0 || (f.path.empty() && f.cap <= 0.0);
    // finished: nothing left, or so little that its completion time rounds to now (else the wake-up
    // would be scheduled at `now` forever)
    if (instant || f.remaining <= kDoneFraction * f.size || (f.rate > 0.0 && now_ + f.remaining / f.rate <= now_)) {
      for (LinkId l : f.path) --links_[l].flows;
      finished.push_back(f.tag);
      f.path.clear();
      free_.push_back(id);
    } else {
      active_[w++] = id;
    }
  }
  active_.resize(w);
}

void FlowNet::reshare() {
  // Progressive filling: every unfrozen flow grows at the same level; the level rises until a link
  // saturates (its flows freeze) or a flow reaches its cap (it freezes). Max-min fair by construction.
  for (LinkId l : scratch_links_) {
    links_[l].touched = false;
    links_[l].load = 0.0;
  }
  scratch_links_.clear();
  for (FlowId id : active_) {
    Flow& f = flows_[id];
    f.frozen = false;
    f.rate = 0.0;
    for (LinkId l : f.path) {
      Link& k = links_[l];
      if (!k.touched) {
        k.touched = true;
        k.remaining = k.stats.capacity;
        k.unfrozen = 0;
        scratch_links_.push_back(l);
      }
      ++k.unfrozen;
    }
  }
  std::size_t unfrozen = active_.size();
  std::size_t rounds = 0;  // guard against rounding: a round that cannot progress freezes the rest
  double level = 0.0;
  while (unfrozen > 0) {
    double delta = kInf;
    for (LinkId l : scratch_links_) {
      const Link& k = links_[l];
      if (k.unfrozen > 0) delta = std::min(delta, k.remaining / k.unfrozen);
    }
    for (FlowId id : active_) {
      const Flow& f = flows_[id];
      if (!f.frozen && f.cap > 0.0) delta = std::min(delta, f.cap - level);
    }
    if (delta == kInf) {  // flows with neither links nor cap: unbounded (advance_to completes them)
      for (FlowId id : active_) flows_[id].frozen = true;
      break;
    }
    delta = std::max(delta, 0.0);
    level += delta;
    for (LinkId l : scratch_links_) {
      Link& k = links_[l];
      if (k.unfrozen > 0) k.remaining -= delta * k.unfrozen;
    }
    const bool progressed_guard = delta > 0.0 || rounds++ < 2 * active_.size() + 2;
    for (FlowId id : active_) {
      Flow& f = flows_[id];
      if (f.frozen) continue;
      bool freeze = f.cap > 0.0 && f.cap - level <= 1e-12 * f.cap;
      if (!freeze) {
        for (LinkId l : f.path) {
          const Link& k = links_[l];
          if (k.remaining <= 1e-12 * k.stats.capacity) {
            freeze = true;
            break;
          }
        }
      }
      if (freeze || !progressed_guard) {
        f.frozen = true;
        f.rate = (f.cap > 0.0 && f.cap - level <= 1e-12 * f.cap) ? f.cap : level;
        for (LinkId l : f.path) --links_[l].unfrozen;
        --unfrozen;
      }
    }
  }
  for (FlowId id : active_) {
    const Flow& f = flows_[id];
    for (LinkId l : f.path) links_[l].load += f.rate;
  }
  if (record_)
    for (LinkId l : scratch_links_) samples_.push_back(RateSample{now_, l, links_[l].load});
}

double FlowNet::next_completion() const {
  double t = kInf;
  for (FlowId id : active_) {
    const Flow& f = flows_[id];
    if (f.rate > 0.0) t = std::min(t, now_ + f.remaining / f.rate);
  }
  return t;
}

// ---- engine ----------------------------------------------------------------------------------------

void Engine::start_flow(double bytes, const std::vector<LinkId>& path, double cap, std::uint64_t tag) {
  net_.advance_to(now_, finished_);
  net_.start(now_, bytes, path, cap, tag);
  dirty_ = true;
}

void Engine::settle() {
  while (dirty_) {
    dirty_ = false;
    net_.advance_to(now_, finished_);  // zero-size or unbounded flows finish at once
    net_.reshare();
    if (!finished_.empty()) {
      std::vector<std::uint64_t> done;
      done.swap(finished_);
      for (std::uint64_t tag : done) sink_->on_flow_done(tag);
    }
  }
  if (net_.active() > 0) {
    const double t = net_.next_completion();
    if (t < std::numeric_limits<double>::infinity()) queue_.push(std::max(t, now_), kFlowWake, 0, ++wake_generation_);
  }
}

std::uint64_t Engine::run() {
  if (dirty_) settle();  // flows started before the first event
  while (!queue_.empty()) {
    const Event e = queue_.pop();
    if (e.kind == kFlowWake) {
      if (e.b != wake_generation_) continue;  // superseded by a later reshare
      now_ = e.time;
      ++events_;
      net_.advance_to(now_, finished_);
      dirty_ = true;
    } else {
      now_ = e.time;
      ++events_;
      sink_->on_event(e);
    }
    if (dirty_) settle();
  }
  return events_;
}

}  // namespace dlscale::sim
