// The process-wide compile slots (see tune/compile.hpp).
#include <algorithm>

#include "tune/compile.hpp"

namespace tune {

CompileSlots& CompileSlots::shared() {
  static CompileSlots slots;
  return slots;
}

void CompileSlots::ensure(int n) {
  {
    const std::lock_guard lock(mutex_);
    limit_ = std::max(limit_, n);
  }
  freed_.notify_all();
}

int CompileSlots::limit() const {
  const std::lock_guard lock(mutex_);
  return limit_;
}

int CompileSlots::in_use() const {
  const std::lock_guard lock(mutex_);
  return in_use_;
}

CompileSlots::Slot::Slot(CompileSlots& slots) : slots_(slots) {
  std::unique_lock lock(slots_.mutex_);
  slots_.freed_.wait(lock, [&] { return slots_.in_use_ < slots_.limit_; });
  ++slots_.in_use_;
}

CompileSlots::Slot::~Slot() {
  {
    const std::lock_guard lock(slots_.mutex_);
    --slots_.in_use_;
  }
  slots_.freed_.notify_one();
}

}  // namespace tune
