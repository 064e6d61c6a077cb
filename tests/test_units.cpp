// Unit tests: the Chan merge, the fit's conventions, component selection, strip planning, the
// CPU backend's strip kernels against the float64 reference, and the reports' plots and previews.

#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/BlasThreads.h"
#include "core/Error.h"
#include "core/Rounding.h"
#include "core/WorkerThreads.h"
#include "detect/ColumnKernels.h"
#include "io/QuickLook.h"
#include "io/Raster.h"
#include "io/SvgPlot.h"
#include "projection/PcaKernels.h"
#include "projection/PcaModel.h"
#include "run/DeviceSelection.h"
#include "run/Pipeline.h"
#include "run/StripPlan.h"
#include "spp/CpuSpp.h"
#include "stats/IntegerMoments.h"
#include "stats/Moments.h"

#include <QtTest>

#include <algorithm>
#include <atomic>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include <sys/mman.h>
#include <unistd.h>

using namespace hyperstream;

namespace {

// `count` doubles that end where an inaccessible page starts: a read past them faults.
class GuardedDoubles {
 public:
  explicit GuardedDoubles(size_t count) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    bytes_ = (count * sizeof(double) + page - 1) / page * page + page;
    void* mapped =
        mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base_ = static_cast<char*>(mapped);
    mprotect(base_ + bytes_ - page, page, PROT_NONE);
    data_ = reinterpret_cast<double*>(base_ + bytes_ - page) - count;
  }
  ~GuardedDoubles() { munmap(base_, bytes_); }
  GuardedDoubles(const GuardedDoubles&) = delete;
  GuardedDoubles& operator=(const GuardedDoubles&) = delete;
  double* data() const { return data_; }

 private:
  char* base_ = nullptr;
  size_t bytes_ = 0;
  double* data_ = nullptr;
};

// Moments of pixels [first, last) of a cube with the backend.
Moments backendMoments(PcaKernels& backend, const testing::Cube& cube, int64_t first,
                       int64_t last) {
  StripView view;
  view.data = cube.values.data() + first * cube.bands;
  view.type = SampleType::Float64;
  view.pixels = last - first;
  view.bands = cube.bands;
  view.nodata = cube.nodata.data();
  backend.accumulateMoments(view);
  return backend.takeMoments(cube.bands);
}

// Random integer pixels of type T about `center` +- `spread`, about a tenth of them invalid.
template <class T>
void randomIntegers(int64_t pixels, int bands, double center, double spread, uint64_t seed,
                    std::vector<T>& samples, std::vector<double>& values,
                    std::vector<unsigned char>& valid) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> offset(-spread, spread);
  samples.resize(static_cast<size_t>(pixels) * bands);
  values.resize(samples.size());
  valid.resize(pixels);
  for (int64_t p = 0; p < pixels; ++p) {
    valid[p] = pixels < 3 || random() % 10 != 0;
    const double common = offset(random);  // correlates the bands
    for (int b = 0; b < bands; ++b) {
      const double v = std::clamp(std::round(center + 0.6 * common + 0.4 * offset(random)),
                                  static_cast<double>(std::numeric_limits<T>::lowest()),
                                  static_cast<double>(std::numeric_limits<T>::max()));
      samples[p * bands + b] = static_cast<T>(v);
      values[p * bands + b] = v;
    }
  }
}

// The same bits.
void verifySameMoments(const Moments& a, const Moments& b) {
  QCOMPARE(a.count, b.count);
  QCOMPARE(a.mean, b.mean);
  QCOMPARE(a.comoment, b.comoment);
  QCOMPARE(a.minimum, b.minimum);
  QCOMPARE(a.maximum, b.maximum);
}

// Exact moments against the float64 reference of the same pixels.
void verifyExactMoments(const Moments& m, const Moments& ref) {
  QCOMPARE(m.count, ref.count);
  QCOMPARE(m.minimum, ref.minimum);
  QCOMPARE(m.maximum, ref.maximum);
  QVERIFY(testing::maxRelativeDifference(m.mean, ref.mean) < 1e-15);
  QVERIFY2(testing::comomentError(m, ref) < 1e-13,
           qPrintable(QString::number(testing::comomentError(m, ref))));
}

// The exact moments of the valid pixels, pixel-interleaved and band-major (the same bits), against
// the float64 reference.
template <class T>
void checkIntegerMomentsOf(IntegerMoments& integer, const std::vector<T>& samples,
                           const std::vector<double>& values,
                           const std::vector<unsigned char>& valid, int64_t pixels, int bands) {
  Moments m;
  QVERIFY2(integer.compute(samples.data(), SampleLayout::pixelInterleaved(bands), valid.data(),
                           pixels, bands, m),
           qPrintable(QString("%1 bands, %2 pixels").arg(bands).arg(pixels)));
  std::vector<T> byBand(samples.size());
  for (int64_t p = 0; p < pixels; ++p)
    for (int b = 0; b < bands; ++b) byBand[b * pixels + p] = samples[p * bands + b];
  Moments fromBands;
  QVERIFY(integer.compute(byBand.data(), SampleLayout::bandMajor(pixels), valid.data(), pixels,
                          bands, fromBands));
  verifySameMoments(fromBands, m);
  verifyExactMoments(m, testing::referenceMoments(values, valid, bands));
}

template <class T>
void checkIntegerMoments(double center, double spread) {
  IntegerMoments integer;
  for (int bands : {1, 2, 31, 33, 45}) {
    for (int64_t pixels : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{1001}}) {
      std::vector<T> samples;
      std::vector<double> values;
      std::vector<unsigned char> valid;  // about one pixel in ten invalid, scattered
      randomIntegers(pixels, bands, center, spread, 17 * static_cast<uint64_t>(bands) + pixels,
                     samples, values, valid);
      checkIntegerMomentsOf(integer, samples, values, valid, pixels, bands);
      if (pixels < 100) continue;
      // Runs of 80 valid pixels between gaps of 19 invalid and a lone valid one (a fill border):
      // band-major rows are packed run by run.
      for (int64_t p = 0; p < pixels; ++p) valid[p] = p % 100 >= 20 || p % 100 == 3;
      checkIntegerMomentsOf(integer, samples, values, valid, pixels, bands);
    }
  }
}

}  // namespace

// OpenBLAS >= 0.3.27's per-thread count (weak: absent before), read back by setting it.
extern "C" int openblas_set_num_threads_local(int threads) __attribute__((weak));

class UnitTests : public QObject {
  Q_OBJECT
  template <class Out>
  static void checkRounding(double nodata) {
    const long double lowest = std::numeric_limits<Out>::lowest();
    const long double highest = std::numeric_limits<Out>::max();
    auto reference = [&](double value, bool avoid) {
      const long double v = value;
      long double r = v >= 0 ? std::floor(v + 0.5L) : std::ceil(v - 0.5L);
      r = std::clamp(r, lowest, highest);
      if (avoid && r == nodata) {
        if (v > nodata)
          r = nodata == highest ? nodata - 1 : nodata + 1;
        else
          r = nodata == lowest ? nodata + 1 : nodata - 1;
      }
      return static_cast<Out>(r);
    };
    std::vector<double> values;
    auto around = [&](double whole) {
      for (double half : {0.5, -0.5}) {
        double v = whole + half;
        values.push_back(v);
        double up = v, down = v;
        for (int step = 0; step < 3; ++step) {
          up = std::nextafter(up, HUGE_VAL);
          down = std::nextafter(down, -HUGE_VAL);
          values.push_back(up);
          values.push_back(down);
        }
      }
      values.push_back(whole);
      values.push_back(std::nextafter(whole, HUGE_VAL));
      values.push_back(std::nextafter(whole, -HUGE_VAL));
    };
    for (double whole = -300; whole <= 300; ++whole) around(whole);
    for (long double end : {lowest, highest, static_cast<long double>(nodata)})
      for (double whole = -3; whole <= 3; ++whole) around(static_cast<double>(end) + whole);
    std::mt19937_64 random(29);
    std::uniform_real_distribution<double> spread(static_cast<double>(lowest) - 10,
                                                  static_cast<double>(highest) + 10);
    for (int i = 0; i < 200000; ++i) values.push_back(spread(random));
    values.push_back(-0.0);
    for (bool avoid : {false, true})
      for (double v : values) {
        const Out got = hyperstream::toSample<Out>(v, nodata, avoid);
        if (got != reference(v, avoid))
          QFAIL(qPrintable(QString("toSample(%1) = %2, the rule gives %3")
                               .arg(v, 0, 'g', 17)
                               .arg(static_cast<double>(got))
                               .arg(static_cast<double>(reference(v, avoid)))));
      }
  }

 private slots:
  // toSample against the rule in long double (exact there): round half away from zero, clamp,
  // and a valid value that lands on nodata moved one step towards itself. Values next to every
  // half, whole numbers near the ends of the range, and random ones.
  void roundingRuleMatchesReference() {
    checkRounding<uint16_t>(65535.0);
    checkRounding<int16_t>(-32768.0);
    checkRounding<uint8_t>(0.0);
    checkRounding<int32_t>(-9999.0);
  }

  void chanMergeEqualsOneBlock() {
    const testing::Cube cube = testing::correlatedCube(37, 29, 7, 11);
    const testing::Reference ref = testing::referencePca(cube);
    auto backend = makeCpuPcaKernels();
    const Moments whole = backendMoments(*backend, cube, 0, cube.pixels());
    // Any partition, merged in any order, gives the same moments.
    std::mt19937 random(3);
    for (int trial = 0; trial < 5; ++trial) {
      std::vector<int64_t> cuts = {0, cube.pixels()};
      for (int c = 0; c < 6; ++c)
        cuts.push_back(std::uniform_int_distribution<int64_t>(1, cube.pixels() - 1)(random));
      std::sort(cuts.begin(), cuts.end());
      std::vector<Moments> parts;
      for (size_t i = 0; i + 1 < cuts.size(); ++i)
        parts.push_back(backendMoments(*backend, cube, cuts[i], cuts[i + 1]));
      std::shuffle(parts.begin(), parts.end(), random);
      Moments merged(cube.bands);
      for (const Moments& part : parts) merged.merge(part);
      QCOMPARE(merged.count, whole.count);
      QVERIFY(testing::maxRelativeDifference(merged.mean, whole.mean) < 1e-14);
      QVERIFY(testing::maxRelativeDifference(merged.comoment, whole.comoment) < 1e-10);
    }
    // ...and equals the two-pass reference.
    QVERIFY(testing::maxRelativeDifference(whole.mean, ref.mean) < 1e-14);
    const std::vector<double> covariance = whole.covariance();
    for (int b = 0; b < cube.bands; ++b)
      QVERIFY(std::abs(covariance[b * cube.bands + b] / (ref.stddev[b] * ref.stddev[b]) - 1) <
              1e-12);
  }

  void momentsSkipInvalidPixels() {
    testing::Cube cube = testing::correlatedCube(10, 10, 4, 5);
    cube.nodata = {-1.0, NAN, NAN, NAN};
    cube.at(0, 0, 0) = -1.0;  // nodata in one band
    cube.at(3, 4, 2) = NAN;   // not finite
    cube.at(5, 5, 3) = INFINITY;
    auto backend = makeCpuPcaKernels();
    const Moments m = backendMoments(*backend, cube, 0, cube.pixels());
    const testing::Reference ref = testing::referencePca(cube);
    QCOMPARE(m.count, int64_t{97});
    QCOMPARE(ref.valid, int64_t{97});
    QVERIFY(testing::maxRelativeDifference(m.mean, ref.mean) < 1e-14);
  }

  void emptyStripMergesToNothing() {
    testing::Cube cube = testing::correlatedCube(2, 3, 3, 1);
    for (double& v : cube.values) v = NAN;
    auto backend = makeCpuPcaKernels();
    Moments total(3);
    total.merge(backendMoments(*backend, cube, 0, cube.pixels()));
    QCOMPARE(total.count, int64_t{0});
  }

  void fitConventions() {
    const testing::Cube cube = testing::correlatedCube(40, 40, 6, 21);
    auto backend = makeCpuPcaKernels();
    std::vector<std::string> warnings;
    const PcaModel model =
        fitPca(backendMoments(*backend, cube, 0, cube.pixels()), MatrixType::Covariance, warnings);
    const testing::Reference ref = testing::referencePca(cube);
    QVERIFY(warnings.empty());
    for (int k = 0; k < model.componentCount(); ++k) {
      if (k > 0) QVERIFY(model.eigenvalues[k] <= model.eigenvalues[k - 1]);
      QVERIFY(std::abs(model.eigenvalues[k] / ref.eigenvalues[k] - 1) < 1e-10);
      double norm = 0, largest = 0;
      for (int b = 0; b < model.bands; ++b) {
        const double v = model.eigenvectors[b * model.componentCount() + k];
        norm += v * v;
        if (std::abs(v) > std::abs(largest)) largest = v;
      }
      QVERIFY(std::abs(norm - 1) < 1e-12);
      QVERIFY(largest > 0);
    }
    QCOMPARE(model.cumulativePercent(model.componentCount() - 1), 100.0);
  }

  void varianceSelection() {
    PcaModel model;
    model.eigenvalues = {50, 30, 15, 4, 1};
    QCOMPARE(model.componentsForVariance(50), 1);
    QCOMPARE(model.componentsForVariance(50.0001), 2);
    QCOMPARE(model.componentsForVariance(80), 2);
    QCOMPARE(model.componentsForVariance(95), 3);
    QCOMPARE(model.componentsForVariance(99), 4);
    QCOMPARE(model.componentsForVariance(100), 5);
  }

  void constantBandsLeftOut() {
    testing::Cube cube = testing::correlatedCube(20, 20, 5, 8);
    for (int64_t p = 0; p < cube.pixels(); ++p) cube.values[p * 5 + 2] = 1234.0;
    auto backend = makeCpuPcaKernels();
    std::vector<std::string> warnings;
    const PcaModel model =
        fitPca(backendMoments(*backend, cube, 0, cube.pixels()), MatrixType::Correlation, warnings);
    QCOMPARE(model.componentCount(), 4);
    QCOMPARE(model.constantBands, std::vector<int>{2});
    QCOMPARE(warnings.size(), size_t{1});
    for (int k = 0; k < 4; ++k) QCOMPARE(model.eigenvectors[2 * 4 + k], 0.0);
    double trace = 0;
    for (double v : model.eigenvalues) trace += v;
    QVERIFY(std::abs(trace - 4.0) < 1e-12);  // a correlation matrix of 4 bands
  }

  void stripPlans() {
    const auto strips = planStrips(10, 3);
    QCOMPARE(strips.size(), size_t{4});
    QCOMPARE(strips.back().row0, int64_t{9});
    QCOMPARE(strips.back().rows, int64_t{1});
    QCOMPARE(planStrips(5, 100).size(), size_t{1});
  }

  // Two passes of a job read into the same kept buffers (allocated once), every strip in order
  // with its own data; larger buffers asked for later replace the kept ones.
  void passesKeepTheirInputBuffers() {
    int allocations = 0;
    HostBuffers kept([&](size_t bytes) {
      ++allocations;
      return allocatePageable(bytes);
    });
    const std::vector<StripRange> strips = planStrips(50, 4);
    std::vector<const unsigned char*> used;
    for (int pass = 0; pass < 2; ++pass) {
      StripPipeline pipeline(3, 64, 0, 0, false);
      pipeline.keepInputBuffersIn(kept);
      StripPipeline::Stages stages;
      stages.read = [](const StripRange& range, unsigned char* buffer) -> const void* {
        std::memset(buffer, static_cast<int>(range.row0), 64);
        return buffer;
      };
      int64_t next = 0;
      stages.compute = [&](const StripRange& range, const void* data, unsigned char*) {
        QCOMPARE(range.row0, next);
        next += range.rows;
        const auto* bytes = static_cast<const unsigned char*>(data);
        QVERIFY(std::all_of(bytes, bytes + 64, [&](unsigned char b) { return b == range.row0; }));
        if (std::find(used.begin(), used.end(), bytes) == used.end()) used.push_back(bytes);
      };
      TestFeedback feedback;
      pipeline.run(strips, stages, feedback, 0, 100);
      QCOMPARE(next, int64_t{50});
    }
    QCOMPARE(allocations, 3);
    QVERIFY(used.size() <= 3);
    QCOMPARE(kept.get(2, 64).size(), size_t{2});
    QCOMPARE(allocations, 3);
    kept.get(3, 128);
    QCOMPARE(allocations, 6);
  }

  // The planner keeps strips, their halo rows and the reader's share within the budget; a
  // compressed file's rows of blocks come out of it, and blocks too large for it are reported.
  void memoryPlans() {
    RasterInfo input;
    input.width = 1000;
    input.height = 1000;
    input.type = GDT_UInt16;
    input.blockWidth = 256;
    input.blockHeight = 256;
    input.compressed = true;
    StripNeeds needs;
    needs.rowsToDo = 1000;
    needs.bands = 190;
    needs.streamingRowBytes = 3 * 1000 * 190 * 2 + 2 * 1000 * 190 * 4;
    needs.residentRowBytes = 2 * 1000 * 190 * 4;
    needs.haloRows = 2;
    needs.leastStrips = 4;
    const StripPlan roomy = planMemory(input, 1024ll << 20, needs);
    QVERIFY(roomy.note.empty());
    QVERIFY(roomy.decoderBytes >= 260 * roomy.inputRowBytes);  // a row of blocks and the halo
    QVERIFY(roomy.budget + roomy.decoderBytes <= 1024ll << 20);
    QVERIFY((roomy.stripRows + 4) * needs.streamingRowBytes <= roomy.budget);
    QVERIFY(roomy.strips.size() >= 4);
    const StripPlan tight = planMemory(input, 64ll << 20, needs);
    QVERIFY(QString::fromStdString(tight.note).contains("256 x 256 blocks"));
    QVERIFY((tight.stripRows + 4) * needs.streamingRowBytes <= tight.budget);
    input.compressed = false;
    input.mappable = true;
    const StripPlan mapped = planMemory(input, 64ll << 20, needs);
    QCOMPARE(mapped.decoderBytes, int64_t{0});
    QVERIFY(mapped.readers * mapped.mappedPerReader + mapped.budget <= 64ll << 20);
    needs.requestedRows = 7;
    QCOMPARE(planMemory(input, 64ll << 20, needs).stripRows, int64_t{7});
    needs.requestedRows = 0;
    QVERIFY_EXCEPTION_THROWN(planMemory(input, 16ll << 20, needs), Error);
  }

  // `auto` leaves a GPU that has yet to start out of small jobs (the SPP of 350 x 350 x 188 int16
  // at window 11 ran twice as fast on 16 CPU cores as on an H100 that had to start), takes it
  // for large ones, and for any job once CUDA runs in the process.
  void autoWeighsTheJob() {
    const JobWork smallSpp{int64_t{350} * 350 * 188 * 2, 11 * 11 / 25.0};
    const JobWork largePca{int64_t{2300} * 2300 * 198 * 2, 1.0};
    QVERIFY(!tooSmallForGpu(smallSpp, 16, false).empty());
    QVERIFY2(QString::fromStdString(tooSmallForGpu(smallSpp, 16, false)).contains("16 CPU cores"),
             tooSmallForGpu(smallSpp, 16, false).c_str());
    QVERIFY(tooSmallForGpu(smallSpp, 16, true).empty());
    QVERIFY(tooSmallForGpu(largePca, 16, false).empty());
    QVERIFY(!tooSmallForGpu(largePca, 512, false).empty());
  }

  void projectionMatchesReference() {
    const testing::Cube cube = testing::correlatedCube(13, 11, 5, 4);
    auto backend = makeCpuPcaKernels();
    std::vector<std::string> warnings;
    const PcaModel model =
        fitPca(backendMoments(*backend, cube, 0, cube.pixels()), MatrixType::Covariance, warnings);
    const testing::Reference ref = testing::referencePca(cube);
    const Projection projection = model.projection(3);
    StripView view{cube.values.data(), SampleType::Float64, cube.pixels(), cube.bands,
                   cube.nodata.data()};
    OutputEncoding encoding;
    encoding.type = OutputType::Float64;
    std::vector<double> out(cube.pixels() * 3);
    backend->project(view, projection, encoding, out.data());
    for (int k = 0; k < 3; ++k) {
      const std::vector<double> expected = testing::referenceComponent(cube, ref, k);
      for (int64_t p = 0; p < cube.pixels(); ++p)
        QVERIFY(std::abs(out[p * 3 + k] - expected[p]) <= 1e-9 * std::sqrt(ref.eigenvalues[k]));
    }
  }

  void integerMomentsMatchReference() {
    if (!IntegerMoments::supported()) QSKIP("this CPU has no AVX-512 VNNI");
    checkIntegerMoments<uint8_t>(128, 128);
    checkIntegerMoments<int16_t>(-300, 2000);
    checkIntegerMoments<uint16_t>(30000, 3000);  // huge DN means
    checkIntegerMoments<uint16_t>(9000, 7000);   // wide spread: flushes every few dozen pairs
    checkIntegerMoments<int32_t>(-1e6, 500);
    checkIntegerMoments<uint32_t>(4e9, 1000);
  }

  void integerMomentsRefuseWideSpreads() {
    if (!IntegerMoments::supported()) QSKIP("this CPU has no AVX-512 VNNI");
    IntegerMoments integer;
    Moments untouched;
    // Deviations beyond 16 bits, and deviations whose 32-bit sums would overflow within 16 pairs.
    for (const auto& [low, high] : {std::pair<uint16_t, uint16_t>{0, 65535}, {10000, 40000}}) {
      const std::vector<uint16_t> samples = {low, high, high, low, low, high};
      const std::vector<unsigned char> valid(3, 1);
      QVERIFY(!integer.compute(samples.data(), SampleLayout::pixelInterleaved(2), valid.data(), 3,
                               2, untouched));
      QCOMPARE(untouched.count, int64_t{0});
    }
    // The backend then takes the float64 path for those groups and still gets them right.
    std::vector<uint16_t> samples;
    std::vector<double> values;
    std::vector<unsigned char> valid;
    randomIntegers<uint16_t>(2000, 6, 32000, 33000, 5, samples, values, valid);
    const std::vector<double> nodata(6, NAN);
    auto backend = makeCpuPcaKernels();
    backend->accumulateMoments(
        StripView{samples.data(), SampleType::UInt16, 2000, 6, nodata.data(), 300});
    const Moments m = backend->takeMoments(6);
    const Moments ref = testing::referenceMoments(values, std::vector<unsigned char>(2000, 1), 6);
    QCOMPARE(m.count, ref.count);
    QVERIFY(testing::comomentError(m, ref) < 1e-12);
  }

  // Groups added to exact sums about one shift give the same bits whatever the split over sums
  // (threads) and the order; a group too far from the shift is refused, the sums untouched.
  void exactSumsAddInAnyOrder() {
    if (!IntegerMoments::supported()) QSKIP("this CPU has no AVX-512 VNNI");
    constexpr int kBands = 37, kGroups = 12;
    constexpr int64_t kGroupPixels = 333;
    std::vector<uint16_t> samples;
    std::vector<double> values;
    std::vector<unsigned char> valid;
    randomIntegers<uint16_t>(kGroups * kGroupPixels, kBands, 20000, 2500, 11, samples, values,
                             valid);
    const SampleLayout layout = SampleLayout::pixelInterleaved(kBands);
    IntegerMoments integer;
    auto addGroup = [&](int g, ExactSums& sums) {
      const int64_t first = g * kGroupPixels;
      return integer.add(samples.data() + first * kBands, layout, valid.data() + first,
                         kGroupPixels, kBands, sums);
    };
    const std::vector<int64_t> shift =
        integer.shiftFor(samples.data(), layout, valid.data(), kGroupPixels, kBands);
    QCOMPARE(static_cast<int>(shift.size()), kBands);
    ExactSums inOrder(kBands, shift);
    for (int g = 0; g < kGroups; ++g) QVERIFY(addGroup(g, inOrder));
    std::vector<int> order(kGroups);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(5));
    std::vector<ExactSums> threads(3, ExactSums(kBands, shift));
    for (int k = 0; k < kGroups; ++k) QVERIFY(addGroup(order[k], threads[k % 3]));
    threads[2].add(threads[0]);
    threads[2].add(threads[1]);
    const Moments a = inOrder.moments();
    verifySameMoments(threads[2].moments(), a);
    verifyExactMoments(a, testing::referenceMoments(values, valid, kBands));
    // Pixels 35000 above the shift: refused, nothing added.
    std::vector<uint16_t> far(samples.begin(), samples.begin() + kGroupPixels * kBands);
    for (uint16_t& v : far) v = static_cast<uint16_t>(std::min(65535, v + 35000));
    QVERIFY(!integer.add(far.data(), layout, valid.data(), kGroupPixels, kBands, inOrder));
    QCOMPARE(inOrder.moments().comoment, a.comoment);
    QCOMPARE(inOrder.moments().count, a.count);
  }

  // The backend's groups that its exact sums refuse (values drifting far from the first group's)
  // are taken about a shift of their own, and the moments stay those of the reference.
  void driftingGroupsStayExact() {
    constexpr int kBands = 9;
    constexpr int64_t kPixels = 4000;
    std::vector<uint16_t> samples;
    std::vector<double> values;
    std::vector<unsigned char> valid;
    randomIntegers<uint16_t>(kPixels, kBands, 1000, 500, 7, samples, values, valid);
    for (int64_t p = kPixels / 2; p < kPixels; ++p)  // the second half 45000 brighter
      for (int b = 0; b < kBands; ++b) {
        samples[p * kBands + b] = static_cast<uint16_t>(samples[p * kBands + b] + 45000);
        values[p * kBands + b] += 45000;
      }
    std::vector<double> nodata(kBands, NAN);
    auto backend = makeCpuPcaKernels();
    StripView view{samples.data(), SampleType::UInt16, kPixels, kBands, nodata.data(), 250};
    backend->accumulateMoments(view);
    verifyExactMoments(
        backend->takeMoments(kBands),
        testing::referenceMoments(values, std::vector<unsigned char>(kPixels, 1), kBands));
  }

  void integerProjectionMatchesReference() {
    testing::Cube cube = testing::correlatedCube(17, 23, 21, 9, 30000.0, 2000.0);
    testing::roundValues(cube);
    const std::vector<uint16_t> samples(cube.values.begin(), cube.values.end());
    auto backend = makeCpuPcaKernels();
    StripView view{samples.data(), SampleType::UInt16, cube.pixels(),
                   cube.bands,     cube.nodata.data(), 23};
    backend->accumulateMoments(view);
    std::vector<std::string> warnings;
    const PcaModel model =
        fitPca(backend->takeMoments(cube.bands), MatrixType::Covariance, warnings);
    const testing::Reference ref = testing::referencePca(cube);
    const int components = 18;  // two blocks of the projection kernel
    const Projection projection = model.projection(components);
    // Both vector widths (64 bytes on AVX-512 CPUs, 32 elsewhere), in float64 and float32.
    for (bool wide : {true, false}) {
      auto projector = makeCpuPcaKernels(wide);
      projector->accumulateMoments(view);  // the projection needs the strip's valid pixels
      projector->takeMoments(cube.bands);
      for (OutputType type : {OutputType::Float64, OutputType::Float32}) {
        OutputEncoding encoding;
        encoding.type = type;
        std::vector<double> out(cube.pixels() * components);
        std::vector<float> out32(out.size());
        projector->project(
            view, projection, encoding,
            type == OutputType::Float64 ? static_cast<void*>(out.data()) : out32.data());
        if (type == OutputType::Float32) std::copy(out32.begin(), out32.end(), out.begin());
        // Float32 sums of values in the thousands cannot resolve the smallest components (std ~2)
        // to 1e-4 of their std: in float32 the leading ones are checked, as test_gpu does.
        const double tolerance = type == OutputType::Float64 ? 1e-7 : 1e-4;
        const int checked = type == OutputType::Float64 ? components : 6;
        for (int k = 0; k < checked; ++k) {
          const std::vector<double> expected = testing::referenceComponent(cube, ref, k);
          for (int64_t p = 0; p < cube.pixels(); ++p)
            QVERIFY2(std::abs(out[p * components + k] - expected[p]) <=
                         tolerance * std::sqrt(ref.eigenvalues[k]),
                     qPrintable(QString("%1 vectors, %2, component %3")
                                    .arg(wide ? "wide" : "narrow")
                                    .arg(QString::fromStdString(outputTypeName(type)))
                                    .arg(k + 1)));
        }
      }
    }
  }

  // A band-major strip projects to the same bits as the same pixels interleaved, with both vector
  // widths and precisions, for a triangular projection (as RX's whitening: component k weighs
  // bands k and after) beside three filters on every band (ACE's targets), over 391 pixels (not a
  // whole number of vectors) with nodata pixels; and within rounding of a long-double sum.
  void bandMajorProjectionEqualsInterleaved() {
    constexpr int kBands = 21, kTargets = 3, kComponents = kBands + kTargets;
    constexpr int64_t kPixels = int64_t{23} * 17;
    std::vector<uint16_t> samples;
    std::vector<double> values;
    std::vector<unsigned char> unused;
    randomIntegers<uint16_t>(kPixels, kBands, 3000, 1500, 11, samples, values, unused);
    std::vector<double> nodata(kBands, NAN);
    nodata[4] = 65535;
    for (int64_t p : {0, 7, 8, 200, 390}) samples[p * kBands + 4] = 65535;
    std::vector<uint16_t> bandMajor(samples.size());
    for (int64_t p = 0; p < kPixels; ++p)
      for (int b = 0; b < kBands; ++b) bandMajor[b * kPixels + p] = samples[p * kBands + b];
    Projection projection;
    projection.bands = kBands;
    projection.components = kComponents;
    std::mt19937_64 random(3);
    std::uniform_real_distribution<double> uniform(-1, 1);
    for (int b = 0; b < kBands; ++b) projection.center.push_back(3000 + 100 * uniform(random));
    projection.weights.assign(static_cast<size_t>(kBands) * kComponents, 0.0);
    for (int b = 0; b < kBands; ++b)
      for (int k = 0; k < kComponents; ++k)
        if (k >= kBands || b >= k) projection.weights[b * kComponents + k] = uniform(random);
    for (bool wide : {true, false}) {
      for (OutputType type : {OutputType::Float64, OutputType::Float32}) {
        OutputEncoding encoding;
        encoding.type = type;
        std::vector<std::vector<double>> results;
        for (bool major : {false, true}) {
          auto projector = makeCpuPcaKernels(wide);
          StripView view{major ? bandMajor.data() : samples.data(),
                         SampleType::UInt16,
                         kPixels,
                         kBands,
                         nodata.data(),
                         kPixels};
          view.bandMajor = major;
          std::vector<double> out(kPixels * kComponents);
          std::vector<float> out32(out.size());
          projector->project(
              view, projection, encoding,
              type == OutputType::Float64 ? static_cast<void*>(out.data()) : out32.data());
          if (type == OutputType::Float32) std::copy(out32.begin(), out32.end(), out.begin());
          results.push_back(out);
        }
        const QString what = QString("%1 vectors, %2")
                                 .arg(wide ? "wide" : "narrow")
                                 .arg(QString::fromStdString(outputTypeName(type)));
        QVERIFY2(results[0] == results[1], qPrintable(what));
        const double tolerance = type == OutputType::Float64 ? 1e-13 : 1e-5;
        for (int64_t p = 0; p < kPixels; ++p) {
          if (samples[p * kBands + 4] == 65535) continue;  // invalid: encoded as nodata
          for (int k = 0; k < kComponents; ++k) {
            long double sum = 0, scale = 0;
            for (int b = 0; b < kBands; ++b) {
              const long double term =
                  (static_cast<long double>(samples[p * kBands + b]) - projection.center[b]) *
                  projection.weights[b * kComponents + k];
              sum += term;
              scale += std::abs(term);
            }
            QVERIFY2(std::abs(results[1][p * kComponents + k] - static_cast<double>(sum)) <=
                         tolerance * static_cast<double>(scale),
                     qPrintable(what + QString(", pixel %1, component %2").arg(p).arg(k)));
          }
        }
      }
    }
  }

  // SPP's chord kernel with 8-float vectors (CPUs without AVX-512) agrees with the 16-float one
  // to rounding (the compiler fuses multiply-adds on 16-float vectors only, so the last bits may
  // differ): a strip with its halo rows, both borders, a nodata pixel and a zero spectrum, a width
  // that is not a multiple of 16.
  void sppVectorWidthsAgree() {
    const int bands = 23, halo = 3;
    const int64_t width = 37, height = 12, row0 = 4, rows = 5;
    std::mt19937 random(7);
    std::uniform_int_distribution<int> value(1, 4000);
    std::vector<uint16_t> data(static_cast<size_t>(width * height * bands));
    for (uint16_t& v : data) v = static_cast<uint16_t>(value(random));
    std::vector<double> nodata(bands, NAN);
    nodata[2] = 77;
    for (int b = 0; b < bands; ++b) {
      data[(6 * width + 3) * bands + b] = 0;    // a zero spectrum
      data[(7 * width + 30) * bands + b] = 77;  // nodata
    }
    const std::vector<double> centroid(bands, 2000.0);
    for (bool mirror : {true, false}) {
      SppStrip strip;
      strip.data = data.data() + (row0 - halo) * width * bands;
      strip.type = SampleType::UInt16;
      strip.bands = bands;
      strip.nodata = nodata.data();
      strip.width = width;
      strip.height = height;
      strip.blockRow0 = row0 - halo;
      strip.blockRows = rows + int64_t{2} * halo;
      strip.row0 = row0;
      strip.rows = rows;
      strip.halo = halo;
      strip.mirror = mirror;
      strip.centroid = centroid.data();
      std::vector<float> cube[2], alpha[2], rho[2];
      double alphaSum[2] = {};
      for (int wide : {0, 1}) {
        cube[wide].resize(static_cast<size_t>(rows * width * bands));
        alpha[wide].resize(static_cast<size_t>(rows * width));
        rho[wide].resize(static_cast<size_t>(rows * width));
        WorkerThreads threads;
        CpuSpp spp(threads, wide != 0);
        alphaSum[wide] = spp.run(strip, {cube[wide].data(), alpha[wide].data(), rho[wide].data()});
      }
      QVERIFY(alphaSum[0] > 0);
      QVERIFY(std::abs(alphaSum[0] - alphaSum[1]) <= 1e-7 * alphaSum[0]);
      for (size_t i = 0; i < alpha[0].size(); ++i) {
        QCOMPARE(std::isnan(alpha[0][i]), std::isnan(alpha[1][i]));
        if (!std::isnan(alpha[0][i])) QVERIFY(std::abs(alpha[0][i] - alpha[1][i]) <= 1e-7);
      }
      for (size_t i = 0; i < cube[0].size(); ++i)
        QVERIFY(std::abs(cube[0][i] - cube[1][i]) <= 1e-6 * std::abs(cube[0][i]));
      QVERIFY(std::isnan(alpha[0][(7 - row0) * width + 30]));  // the nodata pixel
    }
  }

  // Round ticks: multiples of 1, 2 or 5 times a power of ten covering the range, whole numbers on
  // integer axes, powers of ten on log axes; spectra break between bands that are not neighbours.
  void plotTicksAndGaps() {
    for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{
             {0, 0.137}, {-0.093, 0.151}, {412.5, 2486.1}, {1, 198}, {0, 100}, {3, 3}}) {
      const std::vector<double> ticks = svg::ticks({"", lo, hi});
      QVERIFY2(ticks.size() >= 3 && ticks.size() <= 9, qPrintable(QString::number(hi)));
      const double step = ticks[1] - ticks[0];
      const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
      QVERIFY(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 ||
              std::abs(mantissa - 5) < 1e-9);
      for (double t : ticks) QVERIFY(std::abs(t / step - std::round(t / step)) < 1e-6);
    }
    for (double t : svg::ticks({"", 1, 198, svg::Axis::Scale::Integer})) QCOMPARE(t, std::round(t));
    const std::vector<double> decades = svg::ticks({"", 10, 1e9, svg::Axis::Scale::Log});
    QCOMPARE(decades.size(), size_t{9});
    for (size_t i = 0; i < decades.size(); ++i)
      QVERIFY(std::abs(decades[i] / std::pow(10.0, i + 1) - 1) < 1e-12);
    svg::Plot plot("p", {"x", 1, 198, svg::Axis::Scale::Integer},
                   {"y", 10, 1e9, svg::Axis::Scale::Log});
    QVERIFY(plot.svg().contains("10<tspan dy='-5' font-size='9'>9</tspan>"));  // 10^9, not 1e+09

    const std::vector<double> wavelengths = {400, 410, 420, 430, 440, 450};
    const svg::BandAxis withGap({1, 2, 3, 5, 6}, wavelengths, "nm");
    QCOMPARE(withGap.axis().label, QString("wavelength (nm)"));
    QCOMPARE(withGap.x().size(), size_t{6});
    QVERIFY(std::isnan(withGap.x()[3]));
    const std::vector<double> y = withGap.values({1, 2, 3, 4, 5});
    QCOMPARE(y[2], 3.0);
    QVERIFY(std::isnan(y[3]));
    QCOMPARE(y[4], 4.0);
    const svg::BandAxis numbers({2, 3, 4}, {NAN, NAN, NAN, NAN}, "");
    QCOMPARE(numbers.axis().label, QString("band"));
    QCOMPARE(numbers.x(), (std::vector<double>{2, 3, 4}));
  }

  // A preview's PNG: the 2nd percentile black, the 98th white, nodata transparent, at most
  // longSide pixels, read decimated.
  void quickLookPixels() {
    ensureGdalDrivers();
    DatasetPtr raster(GetGDALDriverManager()->GetDriverByName("MEM")->Create("", 100, 50, 1,
                                                                             GDT_Float64, nullptr));
    std::vector<double> values(100 * 50);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i % 100);
    std::fill_n(values.begin(), 200, -1.0);  // rows 0 and 1 nodata
    raster->GetRasterBand(1)->SetNoDataValue(-1);
    QCOMPARE(raster->GetRasterBand(1)->RasterIO(GF_Write, 0, 0, 100, 50, values.data(), 100, 50,
                                                GDT_Float64, 0, 0),
             CE_None);
    const QuickLook look = makeQuickLook(*raster, {1}, 50);
    QCOMPARE(look.width, 50);
    QCOMPARE(look.height, 25);
    QVERIFY(look.dataUrl.startsWith("data:image/png;base64,"));
    const QByteArray png = QByteArray::fromBase64(look.dataUrl.mid(22).toLatin1());
    VSILFILE* file = VSIFileFromMemBuffer("/vsimem/look.png",
                                          reinterpret_cast<GByte*>(const_cast<char*>(png.data())),
                                          png.size(), FALSE);
    VSIFCloseL(file);
    DatasetPtr image(GDALDataset::Open("/vsimem/look.png", GDAL_OF_RASTER));
    QVERIFY(image);
    QCOMPARE(image->GetRasterCount(), 4);
    std::vector<uint8_t> rgba(50 * 25 * 4);
    QCOMPARE(image->RasterIO(GF_Read, 0, 0, 50, 25, rgba.data(), 50, 25, GDT_Byte, 4, nullptr, 4,
                             200, 1),
             CE_None);
    image.reset();
    VSIUnlink("/vsimem/look.png");
    // Preview pixel (r, c) is the nearest source pixel, (2r + 1, 2c + 1).
    const uint8_t* row1 = rgba.data() + 4 * 50;
    QCOMPARE(int{rgba[3]}, 0);  // row 0 shows source row 1: nodata
    QCOMPARE(int{row1[3]}, 255);
    QCOMPARE(int{row1[0]}, 0);                 // source value 1: at or below the 2nd percentile
    QCOMPARE(int{row1[4 * 49]}, 255);          // 99: at or above the 98th
    QCOMPARE(row1[4 * 25], row1[4 * 25 + 1]);  // grey
    QVERIFY(row1[4 * 25] > 100 && row1[4 * 25] < 160);  // 51
  }

  // Fits of a few hundred bands on one thread, larger ones on all; each worker's BLAS calls on
  // that worker alone, and the thread's own count back after (OpenBLAS >= 0.3.27).
  void blasThreadsPerCall() {
    QCOMPARE(fitBlasThreads(224), 1);
    QCOMPARE(fitBlasThreads(2000), std::max(1, QThread::idealThreadCount()));
    QCOMPARE(BlasThreadsHere::available(), openblas_set_num_threads_local != nullptr);
    if (!BlasThreadsHere::available())
      QSKIP("this OpenBLAS (before 0.3.27) counts threads per process only");
    const int before = openblas_set_num_threads_local(5);
    {
      const BlasThreadsHere guard(3);
      QCOMPARE(openblas_set_num_threads_local(3), 3);
    }
    QCOMPARE(openblas_set_num_threads_local(before), 5);
    std::atomic<int> alone{0};
    WorkerThreads workers;
    workers.onEach([&](int) { alone += openblas_set_num_threads_local(1) == 1 ? 1 : 0; });
    QCOMPARE(alone.load(), workers.count());
  }

  // The per-column kernels' vectors give the bits of one value at a time (columns::dot), for band
  // counts around the vectors' widths and groups of 1 to 32 pixels, reading nothing past a
  // block of paddedBands() per pixel.
  void columnKernelsMatchOneValueAtATime() {
    std::mt19937_64 random(5);
    std::uniform_real_distribution<double> uniform(-1000.0, 1000.0);
    for (const int bands : {1, 3, 8, 9, 15, 16, 17, 33, 198}) {
      const int stride = columns::paddedBands(bands);
      for (const int n : {1, 4, 7, 32}) {
        // Ends at an inaccessible page: addProducts' loads stay within the block.
        const GuardedDoubles block(static_cast<size_t>(n) * stride);
        double* deviations = block.data();
        for (int k = 0; k < n; ++k)
          for (int b = 0; b < bands; ++b)
            deviations[static_cast<size_t>(k) * stride + b] = uniform(random);
        std::vector<double> s2(static_cast<size_t>(bands) * (bands + 1) / 2), expected;
        for (double& v : s2) v = uniform(random);
        expected = s2;
        columns::addProducts(deviations, n, bands, stride, s2.data());
        std::vector<double> di(n), dj(n);
        size_t entry = 0;
        for (int i = 0; i < bands; ++i)
          for (int j = i; j < bands; ++j, ++entry) {
            for (int k = 0; k < n; ++k) {
              di[k] = deviations[static_cast<size_t>(k) * stride + i];
              dj[k] = deviations[static_cast<size_t>(k) * stride + j];
            }
            expected[entry] += columns::dot(di.data(), dj.data(), n);
          }
        QVERIFY(std::memcmp(s2.data(), expected.data(), s2.size() * sizeof(double)) == 0);
      }
      // A lower factor with a positive diagonal, and kWhitenedPixels pixels' deviations.
      std::vector<double> factor;
      for (int i = 0; i < bands; ++i)
        for (int j = 0; j <= i; ++j)
          factor.push_back(i == j ? 1.0 + std::fabs(uniform(random)) : uniform(random) / 100);
      constexpr int kPixels = columns::kWhitenedPixels;
      std::vector<double> d(static_cast<size_t>(bands) * kPixels), y(d.size());
      for (double& v : d) v = uniform(random);
      columns::forwardSubstituteLanes(factor.data(), d.data(), bands, y.data());
      std::vector<double> pixel(bands), whitened(bands);
      for (int l = 0; l < kPixels; ++l) {
        for (int b = 0; b < bands; ++b) pixel[b] = d[static_cast<size_t>(b) * kPixels + l];
        columns::forwardSubstitute(factor.data(), pixel.data(), bands, whitened.data());
        for (int b = 0; b < bands; ++b)
          QVERIFY(std::memcmp(&whitened[b], &y[static_cast<size_t>(b) * kPixels + l],
                              sizeof(double)) == 0);
      }
    }
  }
};

QTEST_GUILESS_MAIN(UnitTests)
#include "test_units.moc"
