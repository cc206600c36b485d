// Devices: CUDA properties, the PCIe link from sysfs, NVLink and the driver version from NVML when
// libnvidia-ml.so.1 can be loaded at run time (no NVML headers are needed: the few entry points are
// declared here with the types of nvml.h).
#include <dlfcn.h>
#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <string>

#include "common.hpp"

namespace dlscale::calib {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

/// "16.0 GT/s PCIe" -> 4 (2.5 GT/s Gen1, 5 Gen2, 8 Gen3, 16 Gen4, 32 Gen5, 64 Gen6).
int pcie_generation(const std::string& speed) {
  double gts = 0;
  try {
    gts = std::stod(speed);
  } catch (const std::exception&) {
    return 0;
  }
  if (gts >= 60) return 6;
  if (gts >= 30) return 5;
  if (gts >= 15) return 4;
  if (gts >= 7.5) return 3;
  if (gts >= 4.5) return 2;
  if (gts >= 2) return 1;
  return 0;
}

int to_int(const std::string& s) {
  try {
    return std::stoi(s);
  } catch (const std::exception&) {
    return 0;
  }
}

/// NVML, loaded with dlopen: {driver version, NVLinks active per device bus id}.
struct Nvml {
  using Ret = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
  using Device = void*;
  void* lib = nullptr;
  Ret (*init)() = nullptr;
  Ret (*shutdown)() = nullptr;
  Ret (*driver_version)(char*, unsigned) = nullptr;
  Ret (*by_bus_id)(const char*, Device*) = nullptr;
  Ret (*nvlink_state)(Device, unsigned, int*) = nullptr;

  Nvml() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    init = reinterpret_cast<Ret (*)()>(dlsym(lib, "nvmlInit_v2"));
    shutdown = reinterpret_cast<Ret (*)()>(dlsym(lib, "nvmlShutdown"));
    driver_version = reinterpret_cast<Ret (*)(char*, unsigned)>(dlsym(lib, "nvmlSystemGetDriverVersion"));
    by_bus_id = reinterpret_cast<Ret (*)(const char*, Device*)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    nvlink_state = reinterpret_cast<Ret (*)(Device, unsigned, int*)>(dlsym(lib, "nvmlDeviceGetNvLinkState"));
    if (!init || init() != 0) {
      dlclose(lib);
      lib = nullptr;
    }
  }
  ~Nvml() {
    if (lib) {
      if (shutdown) shutdown();
      dlclose(lib);
    }
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  [[nodiscard]] bool ok() const noexcept { return lib != nullptr; }

  std::string driver() const {
    char buf[96] = {};
    if (!ok() || !driver_version || driver_version(buf, sizeof buf) != 0) return {};
    return buf;
  }
  int nvlinks(const std::string& bus_id) const {
    if (!ok() || !by_bus_id || !nvlink_state) return -1;
    Device d = nullptr;
    if (by_bus_id(bus_id.c_str(), &d) != 0) return -1;
    int active = 0;
    for (unsigned link = 0; link < 18; ++link) {  // NVML_NVLINK_MAX_LINKS
      int state = 0;
      if (nvlink_state(d, link, &state) == 0 && state == 1) ++active;
    }
    return active;
  }
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

void probe_devices(Run& run) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) throw DeviceError(fmt::format("no usable GPU ({}); nothing written", cudaGetErrorString(e)));
  if (count == 0) throw DeviceError("no usable GPU (the CUDA runtime sees no device); nothing written");
  if (run.opt.max_gpus > 0) count = std::min(count, run.opt.max_gpus);

  Nvml nvml;
  int driver_api = 0, runtime = 0;
  CUDA_CALL(cudaDriverGetVersion(&driver_api));
  CUDA_CALL(cudaRuntimeGetVersion(&runtime));
  auto& prov = run.cal.provenance;
  prov.driver = nvml.driver();
  if (prov.driver.empty()) {
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ..." when NVML is missing
    const std::string v = read_line("/proc/driver/nvidia/version");
    const auto k = v.find("Module");
    if (k != std::string::npos) {
      std::size_t i = k + 6;
      while (i < v.size() && v[i] == ' ') ++i;
      prov.driver = v.substr(i, v.find(' ', i) - i);
    }
  }
  prov.driver +=
      fmt::format("{}(CUDA driver API {}.{})", prov.driver.empty() ? "" : " ", driver_api / 1000, (driver_api % 1000) / 10);
  prov.cuda = fmt::format("{}.{}", runtime / 1000, (runtime % 1000) / 10);

  run.max_clock_khz.assign(static_cast<std::size_t>(count), 0);
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    CUDA_CALL(cudaGetDeviceProperties(&p, d));
    DeviceInfo info;
    info.index = d;
    info.name = p.name;
    info.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    info.sm_version = p.major * 10 + p.minor;
    info.sm_count = p.multiProcessorCount;
    info.memory = bytes(static_cast<double>(p.totalGlobalMem));
    info.memory_bus_width = p.memoryBusWidth;
    int clock_khz = 0, mem_khz = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, d) == cudaSuccess && clock_khz > 0)
      info.sm_clock = megahertz(clock_khz / 1e3);
    if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, d) == cudaSuccess && mem_khz > 0) {
      info.memory_clock = megahertz(mem_khz / 1e3);
      // double data rate: 2 transfers per clock, bus width in bits
      info.memory_bandwidth = bytes_per_second(2.0 * mem_khz * 1e3 * p.memoryBusWidth / 8.0);
    }
    run.max_clock_khz[static_cast<std::size_t>(d)] = clock_khz;
    const std::string sys = "/sys/bus/pci/devices/" + lower(info.pci_bus_id) + "/";
    info.pcie_generation = pcie_generation(read_line(sys + "current_link_speed"));
    info.pcie_width = to_int(read_line(sys + "current_link_width"));
    info.pcie_max_generation = pcie_generation(read_line(sys + "max_link_speed"));
    info.pcie_max_width = to_int(read_line(sys + "max_link_width"));
    info.nvlinks = std::max(0, nvml.nvlinks(info.pci_bus_id));
    for (int o = 0; o < count; ++o) {
      int can = 0;
      if (o != d && cudaDeviceCanAccessPeer(&can, d, o) == cudaSuccess && can) info.peers.push_back(o);
    }
    run.progress(fmt::format("GPU {}: {} (sm_{}, {} SMs, {} MHz, {:.1f} GiB, PCIe gen {} x{}{})", d, info.name, info.sm_version,
                             info.sm_count, clock_khz / 1000, in_mebibytes(*info.memory) / 1024.0, info.pcie_generation,
                             info.pcie_width, nvml.ok() ? fmt::format(", {} NVLinks", info.nvlinks) : ", no NVML"));
    run.cal.devices.push_back(std::move(info));
  }
  run.cal.gpu = run.cal.devices.front().name;
  int cublas = 0;
  if (cublasGetProperty(MAJOR_VERSION, &cublas) == CUBLAS_STATUS_SUCCESS) {
    int minor = 0, patch = 0;
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    prov.cublas = fmt::format("{}.{}.{}", cublas, minor, patch);
  }
  const std::size_t cudnn = cudnnGetVersion();  // major·10000 + minor·100 + patch (cuDNN 9)
  prov.cudnn = fmt::format("{}.{}.{}", cudnn / 10000, (cudnn / 100) % 100, cudnn % 100);
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) prov.nccl = fmt::format("{}.{}.{}", nccl / 10000, (nccl / 100) % 100, nccl % 100);
}

}  // namespace dlscale::calib
