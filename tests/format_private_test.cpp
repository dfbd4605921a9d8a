// Files that hold prompts and outputs (base/private_file.hpp, dataset/staged_output.hpp): modes
// whatever the umask, and temporaries no planted file or symlink can redirect.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "base/private_file.hpp"
#include "dataset/staged_output.hpp"
#include "format/trace.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
namespace fs = std::filesystem;

namespace {

// Sets the umask for a scope (a test's files are made under the widest one).
struct Umask {
  explicit Umask(mode_t mask) : old(::umask(mask)) {}
  ~Umask() { ::umask(old); }
  mode_t old;
};

mode_t mode_of(const fs::path& path) {
  struct stat status {};
  REQUIRE(::lstat(path.c_str(), &status) == 0);
  return status.st_mode & 07777;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("a private file is written 0600 and a planted temporary symlink redirects nothing") {
  TempDir dir;
  Umask open_umask(0);
  auto victim = dir / "victim.txt";
  std::ofstream(victim) << "keep me";
  fs::create_symlink(victim, dir / "report.html.tmp");
  write_private_file(dir / "report.html", "<html>");
  CHECK(read_all(dir / "report.html") == "<html>");
  CHECK(mode_of(dir / "report.html") == 0600);
  CHECK(read_all(victim) == "keep me");
  // Nothing of the write is left behind but the file itself (and what was planted).
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path)) ++entries;
  CHECK(entries == 3);
}

TEST_CASE("private directories are created 0700 under any umask and existing ones keep their mode") {
  TempDir dir;
  Umask open_umask(0);
  fs::create_directory(dir / "shared");
  fs::permissions(dir / "shared", fs::perms::all);
  create_private_directories(dir / "shared" / "sweep" / "runs");
  CHECK(mode_of(dir / "shared" / "sweep") == 0700);
  CHECK(mode_of(dir / "shared" / "sweep" / "runs") == 0700);
  CHECK(mode_of(dir / "shared") == 0777);
  create_private_directories(dir / "shared" / "sweep");  // already there: nothing to do
  std::ofstream(dir / "file") << "x";
  CHECK_THROWS_WITH(create_private_directories(dir / "file" / "below"), Catch::Contains("cannot create directory"));
}

TEST_CASE("a staged output refuses a planted temporary symlink and creates nothing through it") {
  TempDir dir;
  auto elsewhere = dir / "elsewhere.rtrace";
  fs::create_symlink(elsewhere, dir / "out.rtrace.tmp");  // dangling: exists() says no
  CHECK_THROWS_WITH(StagedOutput(dir / "in.jsonl", dir / "out.rtrace"),
                    Catch::Contains("out.rtrace.tmp already exists"));
  CHECK_FALSE(fs::exists(elsewhere));
  CHECK(fs::is_symlink(dir / "out.rtrace.tmp"));
  fs::remove(dir / "out.rtrace.tmp");
  {
    Umask open_umask(0);
    StagedOutput staged(dir / "in.jsonl", dir / "out.rtrace");
    CHECK(mode_of(staged.temporary()) == 0600);
  }
  CHECK_FALSE(fs::exists(dir / "out.rtrace.tmp"));  // not committed: removed
}
