#pragma once
// One host, many GPUs: a sweep's work items shared by one orchestrating thread per device, each
// running run_tune with its own TuneOptions::device (and so its own worker process), pulling the
// next item from one queue. Compiles are shared through CompileSlots (tune/compile.hpp).
//
// Results folders: results/<slug>/... when the slug is unique among the devices in use, else
// results/<slug>-<first 8 hex digits of the UUID>/... (two H200s: h200-3f2a9c01 and h200-77b0e4d2),
// so two cards of one model never write the same file; the JSON's device block has the whole UUID.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tune/device.hpp"
#include "tune/sweep.hpp"
#include "tune/tune.hpp"

namespace tune {

// --devices: "all", or a comma list of ordinals ("0,2").
struct DeviceSelection {
  bool all = false;
  std::vector<int> ordinals;
};
// Throws InputError for anything else, or a repeated ordinal.
DeviceSelection parse_devices(const std::string& text);

struct SweepDevice {
  DeviceInfo info;
  std::string dir;  // its results folder under --out
};

// The selection on this machine (the fake devices under TUNE_WORKER_FAKE, see tune/worker_protocol.hpp),
// each with its results folder. Empty for "all" on a machine without a CUDA device: the caller
// runs the compile-only sweep once. Throws InputError for an ordinal the machine does not have.
std::vector<SweepDevice> resolve_devices(const DeviceSelection& selection, int arch);

// The results folder of each device: its slug when no other device in the list shares it, else
// "<slug>-<first 8 hex digits of its UUID>" ("<slug>-<ordinal>" should those collide too).
std::vector<std::string> device_dirs(const std::vector<DeviceInfo>& devices);
// Every folder name a card's results may have (device_dirs gives one of them, depending on the
// cards beside it): its model's slug, the slug with its UUID's first 8 digits, the slug with its
// ordinal. --resume looks in each for the card's finished results and journals.
std::vector<std::string> device_folder_names(const DeviceInfo& device);
// Whether a folder under --out is named as device_dirs names a card of this model (its slug, alone,
// with 8 lowercase hex digits or with an ordinal): --resume outside --replicate looks in each for a
// shape finished by a card the run no longer includes.
bool is_model_folder(const std::string& name, const std::string& slug);

// Runs the work on the devices: one thread per device, each taking the next item of one shared
// queue (replicate: every item on every device, each device with its own queue). A device whose
// run throws DeviceError (its worker cannot start, the device is lost) is reported through `log`,
// its item goes back to the queue for the others (replicate: that replica is dropped), and it takes
// no further items. on_done is called under a lock, one at a time. A stop (an item cut short, or
// one stopped before any variant existed) ends every device's run after its item in hand, and the
// result names those items and the ones not started (replicate: "<item> on device K"). Another
// exception from run_tune stops every device and is rethrown. Throws
// DeviceError, one line, when every device failed with work left; results already written stay.
SweepResult run_sweep_on_devices(
    const std::vector<SweepWork>& work, const TuneOptions& base, const std::vector<SweepDevice>& devices, bool replicate,
    const std::function<void(const SweepWork&, const SweepDevice&, const TuneOutcome&)>& on_done);

// "device 1 (NVIDIA H200, GPU-3f2a9c01-...)".
std::string describe_device(const DeviceInfo& device);

}  // namespace tune
