# Every dependency is found with find_package; scripts/setup.sh installs them (Debian packages).
find_package(CUDAToolkit 12.0 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(muparser REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)  # results of record are kept as .json.gz; the readers take them as they are
if(TUNE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
# tune report and its test run report/report.py with a Python that has matplotlib: Debian's
# python3-matplotlib installs into /usr/bin/python3 (a python3 earlier on PATH may lack it).
set(TUNE_PYTHON /usr/bin/python3 CACHE FILEPATH "Python 3 with matplotlib, for tune report")
