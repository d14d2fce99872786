// --devices: the selection, the per-card results folders, the shared compile slots, and atomic
// writes by concurrent writers of one path.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "tune/compile.hpp"
#include "tune/devices.hpp"
#include "tune/errors.hpp"
#include "tune/tune.hpp"

namespace {

tune::DeviceInfo card(int ordinal, const std::string& name, const std::string& uuid) {
  tune::DeviceInfo d;
  d.ordinal = ordinal;
  d.name = name;
  d.uuid = uuid;
  return d;
}

TEST(Devices, ParsesAllAndOrdinalLists) {
  EXPECT_TRUE(tune::parse_devices("all").all);
  EXPECT_EQ(tune::parse_devices("0,2").ordinals, (std::vector<int>{0, 2}));
  EXPECT_EQ(tune::parse_devices("3").ordinals, (std::vector<int>{3}));
  for (const char* bad : {"", "x", "0,", ",1", "-1", "1.5", "0;1"})
    EXPECT_THROW(tune::parse_devices(bad), tune::InputError) << bad;
  EXPECT_THROW(tune::parse_devices("1,1"), tune::InputError);
}

TEST(Devices, CardsOfOneModelGetFoldersOfTheirOwn) {
  // Two H200s and an L40S: the H200s by the first 8 hex digits of their UUIDs, the L40S by its slug.
  const auto dirs = tune::device_dirs({card(0, "NVIDIA H200", "GPU-3F2A9C01-1111-2222-3333-444444444444"),
                                       card(1, "NVIDIA H200", "GPU-77b0e4d2-1111-2222-3333-444444444444"),
                                       card(2, "NVIDIA L40S", "GPU-00000000-1111-2222-3333-444444444444")});
  EXPECT_EQ(dirs, (std::vector<std::string>{"h200-3f2a9c01", "h200-77b0e4d2", "l40s"}));
  // UUIDs that agree in their first 8 digits, or are not hex: the ordinal.
  EXPECT_EQ(tune::device_dirs({card(0, "NVIDIA H200", "GPU-12345678-a"), card(1, "NVIDIA H200", "GPU-12345678-b")}),
            (std::vector<std::string>{"h200-0", "h200-1"}));
  EXPECT_EQ(tune::device_dirs({card(0, "NVIDIA H200", "?"), card(3, "NVIDIA H200", "?")}),
            (std::vector<std::string>{"h200-0", "h200-3"}));
  EXPECT_EQ(tune::device_dirs({card(0, "NVIDIA H200", "GPU-3f2a9c01-x")}), (std::vector<std::string>{"h200"}));
}

TEST(CompileSlots, ConcurrentHoldersNeverExceedTheLimit) {
  tune::CompileSlots& slots = tune::CompileSlots::shared();
  slots.ensure(3);
  const int limit = slots.limit();
  std::atomic<int> held{0}, peak{0};
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4 * limit; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 20; ++i) {
          const tune::CompileSlots::Slot slot(slots);
          const int now = ++held;
          int p = peak.load();
          while (now > p && !peak.compare_exchange_weak(p, now)) {}
          std::this_thread::yield();
          --held;
        }
      });
  }
  EXPECT_LE(peak.load(), limit);
  EXPECT_GE(peak.load(), 1);
  EXPECT_EQ(slots.in_use(), 0);
}

TEST(WriteFileAtomic, ConcurrentWritersOfOnePathLeaveOneWholeFile) {
  const auto dir = std::filesystem::temp_directory_path() / "tune_devices_test_atomic";
  std::filesystem::remove_all(dir);
  const auto path = dir / "entry.cubin";
  const std::string a(1 << 16, 'a'), b(1 << 16, 'b');
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 20; ++i) tune::write_file_atomic(path, t % 2 ? a : b);
      });
  }
  std::ifstream in(path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  EXPECT_TRUE(text == a || text == b);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u) << "no temporary file is left behind";
  std::filesystem::remove_all(dir);
}

}  // namespace
