#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tune/compile_cache.hpp"
#include "tune/verdict_cache.hpp"

namespace tune {
namespace {

CompileRequest request() {
  return {"template <int I> __global__ void k() {}", "k.cu", {"k<1>"}, {"-arch=sm_90", "-std=c++17"}};
}

TEST(CompileCache, KeyChangesWithSourceOptionsNamesAndNvrtcVersion) {
  const std::string base = CompileCache::key(request(), "13.0");
  EXPECT_EQ(base.size(), 32u);
  EXPECT_EQ(CompileCache::key(request(), "13.0"), base);  // same request, same key
  CompileRequest r = request();
  r.source += " ";
  EXPECT_NE(CompileCache::key(r, "13.0"), base);
  r = request();
  r.options[0] = "-arch=sm_80";
  EXPECT_NE(CompileCache::key(r, "13.0"), base);
  r = request();
  r.options.push_back("-lineinfo");
  EXPECT_NE(CompileCache::key(r, "13.0"), base);
  r = request();
  r.name_expressions[0] = "k<2>";
  EXPECT_NE(CompileCache::key(r, "13.0"), base);
  EXPECT_NE(CompileCache::key(request(), "13.1"), base);
  // Length-prefixed fields: moving a character between fields changes the key.
  r = request();
  r.options = {"-arch=sm_90-std=c++17"};
  EXPECT_NE(CompileCache::key(r, "13.0"), base);
}

TEST(CompileCache, StoresHitsAndTreatsDamagedEntriesAsMisses) {
  const auto dir = std::filesystem::temp_directory_path() / "tune_cache_test";
  std::filesystem::remove_all(dir);
  const CompileCache cache(dir);
  const std::string key = CompileCache::key(request(), "13.0");
  EXPECT_FALSE(cache.load(key).has_value());
  CompileResult r;
  r.ok = true;
  r.cubin = {'\x7f', 'E', 'L', 'F', '\0', '\1'};
  r.lowered_names = {"_Z1kILi1EEvv"};
  r.log =
      "ptxas info    : Compiling entry function '_Z1kILi1EEvv' for 'sm_90'\n"
      "ptxas info    : Used 12 registers, used 0 barriers, 360 bytes cmem[0]\n";
  r.seconds = 4.2;
  EXPECT_EQ(cache.store(key, r), "");
  const auto hit = cache.load(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_TRUE(hit->ok);
  EXPECT_EQ(hit->cubin, r.cubin);
  EXPECT_EQ(hit->lowered_names, r.lowered_names);
  EXPECT_EQ(hit->resources.at("_Z1kILi1EEvv").registers, 12);
  EXPECT_EQ(hit->seconds, 0.0);
  // A truncated CUBIN (torn write) or unreadable metadata is a miss, not a crash.
  std::ofstream(dir / (key + ".cubin"), std::ios::trunc) << "x";
  EXPECT_FALSE(cache.load(key).has_value());
  EXPECT_EQ(cache.store(key, r), "");
  std::ofstream(dir / (key + ".json"), std::ios::trunc) << "{not json";
  EXPECT_FALSE(cache.load(key).has_value());
  // Failed compiles are not stored.
  CompileResult failed;
  const std::string other = CompileCache::key(CompileRequest{"x", "x.cu", {}, {}}, "13.0");
  EXPECT_EQ(cache.store(other, failed), "");
  EXPECT_FALSE(std::filesystem::exists(dir / (other + ".json")));
}

// Two threads asking for one entry at once (a sweep compiling a later shape's baseline ahead while
// that shape's run compiles it): one compile, and the second caller gets its result.
TEST(CompileCache, ASecondRequestForAnEntryBeingCompiledWaitsForItInsteadOfCompilingAgain) {
  const auto dir = std::filesystem::temp_directory_path() / "tune_cache_inflight_test";
  std::filesystem::remove_all(dir);
  const CompileCache cache(dir);
  std::atomic<int> compiles{0};
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  const auto slow = [&](const CompileRequest&) {
    if (compiles++ == 0) {
      entered.set_value();
      released.wait();
    }
    CompileResult r;
    r.ok = true;
    r.cubin = {'\x7f', 'E', 'L', 'F'};
    r.lowered_names = {"_Z1kILi1EEvv"};
    r.seconds = 1.5;
    return r;
  };
  bool first_cached = true, second_cached = false;
  std::string failure;
  CompileResult first, second;
  std::thread a([&] {
    std::string f;
    first = cache.get_or_compile(request(), "13.0", &first_cached, &f, slow);
  });
  entered.get_future().wait();  // a is compiling
  std::thread b([&] {
    std::string f;
    second = cache.get_or_compile(request(), "13.0", &second_cached, &f, slow);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // b has asked by now
  EXPECT_EQ(compiles.load(), 1) << "the second request compiled the entry again";
  release.set_value();
  a.join();
  b.join();
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_FALSE(first_cached);
  EXPECT_TRUE(second_cached);
  EXPECT_EQ(first.cubin, second.cubin);
  EXPECT_EQ(first.seconds, 1.5);
  EXPECT_EQ(second.seconds, 0.0);
  // Once done, the entry is an ordinary hit, and a compile that throws reaches its waiters too.
  bool cached = false;
  EXPECT_EQ(cache.get_or_compile(request(), "13.0", &cached, &failure, slow).cubin, first.cubin);
  EXPECT_TRUE(cached);
  CompileRequest other = request();
  other.source += " ";
  EXPECT_THROW((void)cache.get_or_compile(other, "13.0", &cached, &failure,
                                          [](const CompileRequest&) -> CompileResult { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_FALSE(cache.get_or_compile(other, "13.0", &cached, &failure, slow).cubin.empty());  // not left in flight
}

// A CUBIN of the right length with other bytes (a flipped bit, a file another writer replaced)
// is a miss; the compile that follows overwrites it. An entry without the hash (an older tune's)
// is a miss too.
TEST(CompileCache, ACubinWhoseContentHashDiffersIsAMissAndIsOverwritten) {
  const auto dir = std::filesystem::temp_directory_path() / "tune_cache_hash_test";
  std::filesystem::remove_all(dir);
  const CompileCache cache(dir);
  const std::string key = CompileCache::key(request(), "13.0");
  CompileResult r;
  r.ok = true;
  r.cubin = {'\x7f', 'E', 'L', 'F', '\0', '\1', '\2', '\3'};
  r.lowered_names = {"_Z1kILi1EEvv"};
  ASSERT_EQ(cache.store(key, r), "");
  ASSERT_TRUE(cache.load(key).has_value());
  const auto meta = nlohmann::json::parse(std::ifstream(dir / (key + ".json")));
  EXPECT_EQ(meta.at("cubin_xxh3_64"), CompileCache::content_hash(r.cubin));
  EXPECT_EQ(CompileCache::content_hash(r.cubin).size(), 16u);
  {
    std::fstream f(dir / (key + ".cubin"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5);
    f.put('\x42');  // same length, one byte changed
  }
  EXPECT_EQ(std::filesystem::file_size(dir / (key + ".cubin")), r.cubin.size());
  EXPECT_FALSE(cache.load(key).has_value());
  ASSERT_EQ(cache.store(key, r), "");  // recompiled and overwritten
  const auto hit = cache.load(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->cubin, r.cubin);
  // Metadata without the hash.
  auto old = meta;
  old.erase("cubin_xxh3_64");
  std::ofstream(dir / (key + ".json"), std::ios::trunc) << old.dump();
  EXPECT_FALSE(cache.load(key).has_value());
}

// An entry whose CUBIN cannot be read (its path a folder, an I/O error) is a miss like a damaged
// one, never an exception: the variant is compiled again, and the store says why it cannot write.
TEST(CompileCache, AnEntryWhoseCubinCannotBeReadIsAMiss) {
  const auto dir = std::filesystem::temp_directory_path() / "tune_cache_unreadable_test";
  std::filesystem::remove_all(dir);
  const CompileCache cache(dir);
  const std::string key = CompileCache::key(request(), "13.0");
  CompileResult r;
  r.ok = true;
  r.cubin = {'\x7f', 'E', 'L', 'F'};
  r.lowered_names = {"_Z1kILi1EEvv"};
  ASSERT_EQ(cache.store(key, r), "");
  std::filesystem::remove(dir / (key + ".cubin"));
  std::filesystem::create_directory(dir / (key + ".cubin"));
  std::optional<CompileResult> hit;
  EXPECT_NO_THROW(hit = cache.load(key));
  EXPECT_FALSE(hit.has_value());
  bool cached = true;
  std::string failure;
  CompileResult got;
  EXPECT_NO_THROW(got =
                      cache.get_or_compile(request(), "13.0", &cached, &failure, [&](const CompileRequest&) { return r; }));
  EXPECT_FALSE(cached);
  EXPECT_TRUE(got.ok);
  EXPECT_EQ(got.cubin, r.cubin);
  EXPECT_FALSE(failure.empty());  // the folder stays where the CUBIN would go
}

// Each entry says what it was compiled for: two entries' files swapped (or copied over each
// other) are misses, never one variant's kernel under another's name.
TEST(CompileCache, EntriesSwappedBetweenKeysAreMisses) {
  const auto dir = std::filesystem::temp_directory_path() / "tune_cache_swap_test";
  std::filesystem::remove_all(dir);
  const CompileCache cache(dir);
  CompileRequest other = request();
  other.name_expressions = {"k<2>"};
  const std::string a = CompileCache::key(request(), "13.0"), b = CompileCache::key(other, "13.0");
  CompileResult ra, rb;
  ra.ok = rb.ok = true;
  ra.cubin = {'\x7f', 'E', 'L', 'F', 'a'};
  ra.lowered_names = {"_Z1kILi1EEvv"};
  rb.cubin = {'\x7f', 'E', 'L', 'F', 'b'};
  rb.lowered_names = {"_Z1kILi2EEvv"};
  ASSERT_EQ(cache.store(a, ra), "");
  ASSERT_EQ(cache.store(b, rb), "");
  ASSERT_TRUE(cache.load(a).has_value());
  for (const char* ext : {".cubin", ".json"}) {
    std::filesystem::rename(dir / (a + ext), dir / "t");
    std::filesystem::rename(dir / (b + ext), dir / (a + ext));
    std::filesystem::rename(dir / "t", dir / (b + ext));
  }
  EXPECT_FALSE(cache.load(a).has_value());
  EXPECT_FALSE(cache.load(b).has_value());
  bool cached = true;
  std::string failure;
  const CompileResult got =
      cache.get_or_compile(request(), "13.0", &cached, &failure, [&](const CompileRequest&) { return ra; });
  EXPECT_FALSE(cached);
  EXPECT_EQ(got.lowered_names, ra.lowered_names);
  EXPECT_EQ(cache.load(a)->lowered_names, ra.lowered_names);  // overwritten with its own
}

// A cache that cannot be written (read-only, full, a folder where nothing can be created) is no
// failure of the compile: store says why and throws nothing.
TEST(CompileCache, AStoreThatCannotBeWrittenSaysWhyAndThrowsNothing) {
  CompileResult r;
  r.ok = true;
  r.cubin = {'\x7f', 'E', 'L', 'F'};
  r.lowered_names = {"_Z1kILi1EEvv"};
  const std::string key = CompileCache::key(request(), "13.0");
  std::vector<std::filesystem::path> dirs = {"/proc"};  // exists; nobody, root included, creates files there
  const auto read_only = std::filesystem::temp_directory_path() / "tune_cache_read_only";
  if (geteuid() != 0) {  // root writes through permissions
    std::filesystem::remove_all(read_only);
    std::filesystem::create_directories(read_only);
    std::filesystem::permissions(read_only, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    dirs.push_back(read_only);
  }
  for (const auto& dir : dirs) {
    const CompileCache cache(dir);
    std::string why;
    EXPECT_NO_THROW(why = cache.store(key, r)) << dir;
    EXPECT_NE(why.find("cannot write"), std::string::npos) << dir << ": " << why;
    EXPECT_FALSE(cache.load(key).has_value()) << dir;
  }
  if (geteuid() != 0) std::filesystem::permissions(read_only, std::filesystem::perms::owner_all);
}

// A folder that cannot be made (under /proc, even for root) is a cache that finds nothing and says
// why on store, as a read-only one does: the constructor threw, which stopped tune check (adversarial
// round 7).
TEST(CompileCache, AFolderThatCannotBeMadeIsACacheThatStoresNothingAndSaysWhy) {
  CompileResult r;
  r.ok = true;
  r.cubin = {'\x7f', 'E', 'L', 'F'};
  const std::string key = CompileCache::key(request(), "13.0");
  std::optional<CompileCache> cache;
  ASSERT_NO_THROW(cache.emplace("/proc/tune_cache_not_made"));
  EXPECT_FALSE(cache->load(key).has_value());
  std::string why;
  EXPECT_NO_THROW(why = cache->store(key, r));
  EXPECT_NE(why.find("cannot create the folder"), std::string::npos) << why;
  bool cached = true;
  std::string failure;
  const CompileResult got =
      cache->get_or_compile(request(), "13.0", &cached, &failure, [&](const CompileRequest&) { return r; });
  EXPECT_FALSE(cached);
  EXPECT_TRUE(got.ok);
  EXPECT_NE(failure.find("cannot create the folder"), std::string::npos) << failure;
}

// What a writer killed mid-write (kill -9 between write and rename) left in the cache: removed when
// the cache opens, once old and its writer (the pid in the name) is gone; a live writer's temporary,
// a recent one (a writer on another host of a shared cache) and the entries stay. They were never
// removed (round 8).
TEST(CompileCache, OpeningRemovesTheTemporariesOfKilledWriters) {
  const auto dir = std::filesystem::temp_directory_path() / ("tune_cache_stale_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  const std::string key(32, 'a');
  const auto put = [&](const std::string& name, bool old) {
    std::ofstream(dir / name) << "x";
    if (old)
      std::filesystem::last_write_time(dir / name, std::filesystem::file_time_type::clock::now() - std::chrono::hours(3));
  };
  const std::string dead_cubin = key + ".cubin.tmp." + std::to_string(gone) + ".0";
  const std::string dead_meta = key + ".json.tmp." + std::to_string(gone) + ".1";
  const std::string live = key + ".cubin.tmp." + std::to_string(getpid()) + ".2";
  const std::string recent = std::string(32, 'b') + ".cubin.tmp." + std::to_string(gone) + ".3";
  put(dead_cubin, true);
  put(dead_meta, true);
  put(live, true);
  put(recent, false);
  put(key + ".cubin", true);
  put("notes.tmp.x.1", true);
  const CompileCache cache(dir);
  EXPECT_FALSE(std::filesystem::exists(dir / dead_cubin));
  EXPECT_FALSE(std::filesystem::exists(dir / dead_meta));
  for (const std::string& kept : {live, recent, key + ".cubin", std::string("notes.tmp.x.1")})
    EXPECT_TRUE(std::filesystem::exists(dir / kept)) << kept;
  // The verdict cache beside it, the same way.
  const auto verdicts = VerdictCache::beside(dir);
  std::filesystem::create_directories(verdicts);
  const std::string dead_verdict = key + ".json.tmp." + std::to_string(gone) + ".4";
  std::ofstream(verdicts / dead_verdict) << "x";
  std::filesystem::last_write_time(verdicts / dead_verdict,
                                   std::filesystem::file_time_type::clock::now() - std::chrono::hours(3));
  const VerdictCache verdict_cache(verdicts);
  EXPECT_FALSE(std::filesystem::exists(verdicts / dead_verdict));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tune
