#pragma once
// tune report: the comparison page for a results folder. The tables and the charts are made by
// report/report.py (matplotlib); this runs it with a Python that has matplotlib.
#include <filesystem>
#include <string>
#include <vector>

namespace tune {

struct ReportOptions {
  std::filesystem::path results_dir;
  std::filesystem::path out_dir;
  std::string peaks;               // JSON of device peaks keyed by GPU slug (optional)
  std::vector<std::string> torch;  // torch baseline files besides RESULTS/<gpu>/torch_baseline.json
  bool allow_synthetic = false;    // report results not measured on a GPU, marked synthetic
};

// Runs the report script and returns its exit status (0 done, 2 bad input).
// The script: $TUNE_REPORT_SCRIPT, else <prefix>/share/tune/report/report.py beside an installed tune,
// else the source tree's for a tune of the build tree.
// The interpreter: $TUNE_PYTHON, else the one CMake was given (TUNE_PYTHON).
// Throws InputError when neither can be found or started.
int run_report(const ReportOptions& options);

}  // namespace tune
