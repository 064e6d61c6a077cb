#pragma once
// The heavy per-strip kernels, behind one interface so that the pipeline runs unchanged on the
// CPU (OpenBLAS) or a GPU backend.

#include "core/HostMemory.h"
#include "pca/Moments.h"

#include <gdal.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hyperstream {

// A strip of pixel-interleaved values in the file's own type (pixel p, band b at p*bands+b).
struct StripView {
  const void* data = nullptr;
  GDALDataType type = GDT_Unknown;
  int64_t pixels = 0;
  int bands = 0;
  // Per band nodata value, NaN where the band has none. A pixel is valid when every band is
  // finite and differs from its nodata value.
  const double* nodata = nullptr;
  // Pixels per group (a fixed number of whole image rows; the last group of the image may be
  // shorter). Strips hold whole groups and kernels work group by group, so that results do not
  // depend on how the image was cut into strips.
  int64_t groupPixels = 0;
  // Index of the strip's first pixel in the image (row0 x width).
  int64_t firstPixel = 0;
};

// The whole job's shape, told to the backend before the first pass.
struct CubeLayout {
  int64_t pixels = 0;  // of the image
  int bands = 0;
  GDALDataType type = GDT_Unknown;
  int64_t maxStripPixels = 0;
  int maxComponents = 0;  // at most this many components are projected
};

// Seconds and bytes of the work a device backend did, measured on the device (zero on the CPU).
struct DeviceTimes {
  double upload = 0, moments = 0, range = 0, projection = 0, download = 0, spp = 0;
  int64_t uploadBytes = 0, downloadBytes = 0;
};

// Image rows per group for an image of this width: enough pixels for BLAS to run at full rate.
int64_t groupRows(int64_t width);

// A linear transform of centred pixels: component k of pixel p = sum_b (x[p,b] - center[b]) *
// weights[b*components + k]. Invalid pixels get `outputNodata`.
struct Projection {
  int bands = 0;
  int components = 0;
  std::vector<double> center;   // per band
  std::vector<double> weights;  // bands x components, row-major
};

// Per component min/max over valid pixels (the range of the Byte rescale).
struct ComponentRange {
  std::vector<double> minimum;
  std::vector<double> maximum;
  void merge(const ComponentRange& other);
};

// How projected values become output values.
struct OutputEncoding {
  GDALDataType type = GDT_Float32;  // GDT_Float32, GDT_Float64 or GDT_Byte
  double nodata = 0.0;              // written for invalid pixels
  // Byte only: value v of component k becomes round(byteLow + (v - min[k]) * scale[k]),
  // rounding half away from zero.
  double byteLow = 0.0;
  std::vector<double> byteMinimum;
  std::vector<double> byteScale;
};

// One strip of spatial preprocessing (the definition is in SppJob.h): the strip's rows with the
// window's halo rows around them, pixel-interleaved in the file's type.
struct SppStrip {
  const void* data = nullptr;  // rows [blockRow0, blockRow0 + blockRows)
  GDALDataType type = GDT_Unknown;
  int bands = 0;
  const double* nodata = nullptr;  // per band, NaN for none
  int64_t width = 0, height = 0;   // of the image
  int64_t blockRow0 = 0, blockRows = 0;
  int64_t row0 = 0, rows = 0;  // the rows to compute, inside the block
  int halo = 0;                // window / 2
  bool mirror = false;         // border rule: mirror, else truncate
  const double* centroid = nullptr;
  GDALDataType outputType = GDT_Float32;  // of the displaced spectra
  double outputNodata = 0;
};

// Where a strip's results go: rows x width pixels each.
struct SppOutput {
  void* cube = nullptr;  // displaced spectra, pixel-interleaved, SppStrip::outputType
  float* alpha = nullptr;
  float* rho = nullptr;
};

class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;
  virtual std::string name() const = 0;
  // True when the kernels keep every CPU core busy (multi-threaded BLAS): the pipeline then reads
  // while they wait rather than while they run, since BLAS splits its work evenly over the cores
  // and a reader thread stealing one of them stalls all of them.
  virtual bool usesEveryCore() const { return false; }
  // A hint about running faster on this machine, or empty.
  virtual std::string advice() const { return {}; }

  // Called once before the first pass. Returns true when the backend keeps the whole cube itself
  // from the first pass on (in device memory): the later passes then pass StripViews with null
  // data and nothing is read again.
  virtual bool prepare(const CubeLayout& layout) = 0;
  // Host buffers for strips (page-locked for a GPU, so copies run at the bus rate), allocated the
  // way the backend reads them fastest.
  virtual HostMemory allocateHost(size_t bytes) { return allocatePageable(bytes); }

  // Adds the valid pixels of one strip to the running moments: count, mean, centred co-moment
  // and band ranges. Strip data may be reused as soon as this returns.
  virtual void accumulateMoments(const StripView& strip) = 0;
  // The moments of every strip accumulated since the last call, and starts afresh.
  virtual Moments takeMoments(int bands) = 0;
  // Range of each projected component over the strip's valid pixels.
  virtual ComponentRange componentRange(const StripView& strip, const Projection& projection) = 0;
  // Projects a strip and encodes it into `output` (pixel-interleaved, encoding.type).
  virtual void project(const StripView& strip, const Projection& projection,
                       const OutputEncoding& encoding, void* output) = 0;
  // Spatial preprocessing of one strip; returns the sum of alpha over its valid pixels.
  virtual double spatialPreprocess(const SppStrip& strip, const SppOutput& output) = 0;

  virtual DeviceTimes deviceTimes() const { return {}; }
};

// The multi-core CPU backend (its own worker threads and OpenBLAS, all cores). Its moments are
// summed group by group in order (Chan's merge), and each pixel is projected on its own, so the
// results are bitwise the same whatever the strip heights. Its own loops use 64-byte vectors on
// CPUs with AVX-512, else 32-byte ones; `wideVectors` forces one or the other (the results agree to
// rounding).
std::unique_ptr<ComputeBackend> makeCpuBackend();
std::unique_ptr<ComputeBackend> makeCpuBackend(bool wideVectors);

}  // namespace hyperstream
