#include <gtest/gtest.h>

#include <type_traits>

#include "cuda/owners.hpp"

namespace tune::cuda {
namespace {

template <typename T>
constexpr bool kMoveOnlyOwner =
    std::is_nothrow_move_constructible_v<T>&& std::is_nothrow_move_assignable_v<T>&& std::is_nothrow_destructible_v<T> &&
    !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T>;

static_assert(kMoveOnlyOwner<Context>);
static_assert(kMoveOnlyOwner<Module>);
static_assert(kMoveOnlyOwner<Stream>);
static_assert(kMoveOnlyOwner<Event>);
static_assert(kMoveOnlyOwner<DeviceBuffer>);
static_assert(kMoveOnlyOwner<GraphExec>);

TEST(Owners, AreMoveOnlyAndNeverThrowOnDestruction) {
  // Empty owners are safe to destroy without a driver.
  DeviceBuffer a;
  DeviceBuffer b(std::move(a));
  EXPECT_EQ(b.get(), 0u);
  Module m;
  Module n(std::move(m));
  EXPECT_EQ(n.get(), nullptr);
}

}  // namespace
}  // namespace tune::cuda
