// The spectral angle mapper (hyperstream sam) against a float64 reference written here: each
// angle as atan2(|x × s|, x · s) in long double, |x × s|² summed as Lagrange's identity gives it
// (Σ_{i<j} (x_i s_j − x_j s_i)², no cancellation), the class as the nearest spectrum. Libraries
// as CSV tables, ENVI spectral libraries (.sli, both byte orders) and USGS splib07 ASCII folders,
// resampled against a reference that integrates each band's Gaussian response numerically.

#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "detect/ColumnDetectJob.h"
#include "detect/DetectJob.h"
#include "detect/SamJob.h"
#include "pca/PcaJob.h"
#include "synth/Synth.h"
#include "unmixing/AbundanceJob.h"
#include "unmixing/EndmemberJob.h"

#include <QDir>
#include <QFile>
#include <QtTest>

#include <gdal_priv.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

using namespace hyperstream;

namespace {

constexpr double kNodata = -9999.0;

long double referenceAngle(const double* x, const std::vector<double>& s) {
  const size_t n = s.size();
  long double crossSquared = 0, dot = 0;
  for (size_t i = 0; i < n; ++i) {
    dot += static_cast<long double>(x[i]) * s[i];
    for (size_t j = i + 1; j < n; ++j) {
      const long double c =
          static_cast<long double>(x[i]) * s[j] - static_cast<long double>(x[j]) * s[i];
      crossSquared += c * c;
    }
  }
  return std::atan2(std::sqrt(crossSquared), dot);
}

// A scene of mixtures of `library` spectra with noise, plus pixels that are a library spectrum
// scaled (angle 0), a zero pixel, and nodata pixels.
struct Scene {
  testing::Cube cube;
  std::vector<std::vector<double>> library;
  std::vector<int64_t> exact, invalid;
  int64_t zero = -1;
};

Scene mixedScene(int64_t rows, int64_t cols, int bands, int spectra, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> noise(0.0, 1.0);
  Scene scene;
  for (int k = 0; k < spectra; ++k) {
    std::vector<double> s(bands);
    const double phase = 6.28 * unit(random), level = 1000 + 3000 * unit(random);
    for (int b = 0; b < bands; ++b)
      s[b] = level * (1.2 + std::sin(phase + 0.15 * (k + 1) * b)) + 200 * unit(random);
    scene.library.push_back(s);
  }
  testing::Cube& cube = scene.cube;
  cube.rows = rows;
  cube.cols = cols;
  cube.bands = bands;
  cube.values.resize(static_cast<size_t>(rows * cols * bands));
  cube.nodata.assign(bands, std::nan(""));
  for (int64_t p = 0; p < cube.pixels(); ++p) {
    const int main = static_cast<int>(unit(random) * spectra);
    const double share = 0.55 + 0.45 * unit(random), scale = 0.5 + unit(random);
    const int other = (main + 1) % spectra;
    for (int b = 0; b < bands; ++b)
      cube.values[static_cast<size_t>(p * bands + b)] =
          scale * (share * scene.library[main][b] + (1 - share) * scene.library[other][b]) +
          30 * noise(random);
  }
  for (int k = 0; k < spectra; ++k) {
    const int64_t p = 3 + 5 * k;
    for (int b = 0; b < bands; ++b)
      cube.values[static_cast<size_t>(p * bands + b)] = 0.25 * scene.library[k][b];
    scene.exact.push_back(p);
  }
  scene.zero = cube.pixels() - 2;
  for (int b = 0; b < bands; ++b) cube.values[static_cast<size_t>(scene.zero * bands + b)] = 0;
  for (int k = 0; k < 6; ++k) {
    const int64_t p = 40 + 7 * k;
    for (int b = 0; b < bands; ++b)
      if (k % 2 == 0 || b == k) cube.values[static_cast<size_t>(p * bands + b)] = kNodata;
    scene.invalid.push_back(p);
  }
  cube.nodata.assign(bands, kNodata);
  return scene;
}

void writeCsvLibrary(const std::vector<std::vector<double>>& library, const QString& path) {
  QByteArray csv = "id,row,col";
  for (size_t b = 0; b < library.front().size(); ++b)
    csv += ",band " + QByteArray::number(static_cast<int>(b + 1));
  csv += "\n";
  for (size_t k = 0; k < library.size(); ++k) {
    csv += "mineral " + QByteArray::number(static_cast<int>(k + 1)) + ",0,0";
    for (const double v : library[k]) csv += "," + QByteArray::number(v, 'g', 17);
    csv += "\n";
  }
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(csv);
}

SamOptions samOptions(const QString& input, const QString& library, const QString& output) {
  SamOptions options;
  options.input = input.toStdString();
  options.library.library = library.toStdString();
  options.output = output.toStdString();
  options.outputType = OutputType::Float64;
  options.device = DeviceChoice::cpu();
  return options;
}

SamResult runQuietly(const SamOptions& options) {
  TestFeedback feedback;
  return runSpectralAngles(options, feedback);
}

// The written class map and angles against the reference; returns the largest angle error.
double checkAgainstReference(const testing::Cube& cube, const std::vector<std::vector<double>>& lib,
                             const QString& classes, const QString& angles, double maxAngle) {
  const std::vector<double> written = testing::samplesOf(classes);
  const std::vector<double> all = testing::samplesOf(angles);
  const int64_t pixels = cube.pixels();
  const auto k = static_cast<int>(lib.size());
  double worst = 0;
  for (int64_t p = 0; p < pixels; ++p) {
    const double* x = &cube.values[static_cast<size_t>(p * cube.bands)];
    bool zero = true;
    for (int b = 0; b < cube.bands; ++b) zero &= x[b] == 0;
    if (!testing::referenceValid(cube, p) || zero) {
      if (written[p] != 0) return 1e300;
      for (int s = 0; s < k; ++s)
        if (!std::isnan(all[static_cast<size_t>(s * pixels + p)])) return 1e300;
      continue;
    }
    int best = 0;
    long double bestAngle = 10;
    for (int s = 0; s < k; ++s) {
      const long double angle = referenceAngle(x, lib[s]);
      worst = std::max(
          worst, static_cast<double>(std::fabs(angle - all[static_cast<size_t>(s * pixels + p)])));
      if (angle < bestAngle) {
        bestAngle = angle;
        best = s;
      }
    }
    const double expected = bestAngle <= maxAngle ? best + 1 : 0;
    if (written[p] != expected) {
      qWarning("pixel %lld: class %g, the reference's %g (angle %.17Lg)", static_cast<long long>(p),
               written[p], expected, bestAngle);
      return 1e300;
    }
  }
  return worst;
}

// Sets the bands' wavelengths (nm) and FWHM in a GeoTIFF's band metadata.
void setWavelengths(const QString& path, const std::vector<double>& wavelengths, double fwhm) {
  GDALDatasetUniquePtr dataset(GDALDataset::Open(path.toUtf8().constData(), GDAL_OF_UPDATE));
  QVERIFY(dataset);
  for (size_t b = 0; b < wavelengths.size(); ++b) {
    GDALRasterBand* band = dataset->GetRasterBand(static_cast<int>(b + 1));
    band->SetMetadataItem("wavelength", QByteArray::number(wavelengths[b], 'g', 17).constData());
    band->SetMetadataItem("wavelength_units", "Nanometers");
    band->SetMetadataItem("fwhm", QByteArray::number(fwhm, 'g', 17).constData());
  }
}

// A smooth reflectance-like spectrum with absorption features, at wavelength w (nm).
double syntheticSpectrum(int k, double w) {
  const double centre = 900 + 350 * k, depth = 0.3 + 0.1 * k;
  return (0.4 + 0.1 * k) + 0.15 * std::sin(w / (180.0 + 40 * k)) -
         depth * 0.2 * std::exp(-std::pow((w - centre) / (25.0 + 10 * k), 2));
}

// The reference resampling: the band's Gaussian over ±3σ against the library as a step function
// (each channel's value from halfway to its neighbours), each step's share of the Gaussian by
// Simpson's rule on 64 intervals, over the channels present.
double referenceBandValue(const std::vector<double>& wavelengths, const std::vector<double>& values,
                          double centre, double fwhm) {
  const double sigma = fwhm / 2.3548200450309493;
  const auto gaussian = [&](long double w) {
    return std::exp(-0.5L * std::pow((w - centre) / sigma, 2));
  };
  const size_t n = wavelengths.size();
  long double weighted = 0, total = 0;
  for (size_t c = 0; c < n; ++c) {
    const double start = c == 0 ? wavelengths[0] - (wavelengths[1] - wavelengths[0]) / 2
                                : (wavelengths[c - 1] + wavelengths[c]) / 2;
    const double end = c == n - 1
                           ? wavelengths[n - 1] + (wavelengths[n - 1] - wavelengths[n - 2]) / 2
                           : (wavelengths[c] + wavelengths[c + 1]) / 2;
    const long double a = std::max(start, centre - 3 * sigma),
                      b = std::min(end, centre + 3 * sigma);
    if (!(b > a) || std::isnan(values[c])) continue;
    const int steps = 64;
    const long double h = (b - a) / steps;
    long double area = gaussian(a) + gaussian(b);
    for (int i = 1; i < steps; ++i) area += (i % 2 ? 4 : 2) * gaussian(a + i * h);
    area *= h / 3;
    weighted += area * values[c];
    total += area;
  }
  return static_cast<double>(weighted / total);
}

void writeText(const QString& path, const QByteArray& text) {
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(text);
}

// An ENVI spectral library of float32 values in the given byte order, with `ignore` where NaN.
void writeSli(const QString& stem, const std::vector<double>& wavelengths,
              const std::vector<std::vector<double>>& spectra, const QStringList& names,
              bool bigEndian) {
  QByteArray header = "ENVI\ndescription = {test library}\nsamples = " +
                      QByteArray::number(static_cast<int>(wavelengths.size())) +
                      "\nlines = " + QByteArray::number(static_cast<int>(spectra.size())) +
                      "\nbands = 1\nheader offset = 0\nfile type = ENVI Spectral Library\n"
                      "data type = 4\ninterleave = bsq\nbyte order = " +
                      QByteArray(bigEndian ? "1" : "0") +
                      "\nwavelength units = Micrometers\ndata ignore value = -1\n"
                      "spectra names = {" +
                      names.join(", ").toUtf8() + "}\nwavelength = {\n";
  for (size_t c = 0; c < wavelengths.size(); ++c)
    header += (c ? ", " : " ") + QByteArray::number(wavelengths[c] / 1000, 'g', 17);
  header += "}\n";
  writeText(stem + ".hdr", header);
  QByteArray data;
  for (const std::vector<double>& s : spectra)
    for (const double v : s) {
      const float f = std::isnan(v) ? -1.0f : static_cast<float>(v);
      char bytes[4];
      std::memcpy(bytes, &f, 4);
      if (bigEndian) std::reverse(bytes, bytes + 4);
      data.append(bytes, 4);
    }
  writeText(stem + ".sli", data);
}

std::string errorParameter(const std::function<void()>& work) {
  try {
    work();
  } catch (const Error& error) {
    return error.parameter();
  }
  return "none";
}

}  // namespace

class TestSam : public QObject {
  Q_OBJECT

 private slots:
  void anglesMatchReference_data();
  void anglesMatchReference();
  void stripsAndLayoutsGiveTheSameBits();
  void enviLibraryResampled();
  void usgsFolderResampled();
  void realSceneMatchesReference();
  void clearErrors();
  void detectionTargetsFromALibrary();
  void tablesOfSpectraOneRule();
  void usgsFillInAnEnviLibrary();
};

void TestSam::anglesMatchReference_data() {
  QTest::addColumn<int>("type");
  QTest::addColumn<double>("maxAngle");
  QTest::newRow("Float64, every pixel classified") << static_cast<int>(GDT_Float64) << kAnyAngle;
  QTest::newRow("Int16, at most 0.1 rad") << static_cast<int>(GDT_Int16) << 0.1;
}

// Classes identical and angles within 1e-12 rad of the reference, exact spectra at angle 0
// (to 1e-12: acos of the cosine would be 1e-8 off), zero and nodata pixels class 0 and NaN.
void TestSam::anglesMatchReference() {
  QFETCH(int, type);
  QFETCH(double, maxAngle);
  Scene scene = mixedScene(37, 23, 45, 5, 7);
  if (type == GDT_Int16)
    for (double& v : scene.cube.values)
      if (v != kNodata) v = std::round(v / 4);
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), static_cast<GDALDataType>(type));
  writeCsvLibrary(scene.library, dir + "/library.csv");
  SamOptions options = samOptions(dir + "/in.tif", dir + "/library.csv", dir + "/classes.tif");
  options.angleOutput = (dir + "/angle.tif").toStdString();
  options.anglesOutput = (dir + "/angles.tif").toStdString();
  options.countsCsv = (dir + "/counts.csv").toStdString();
  options.htmlReport = (dir + "/report.html").toStdString();
  options.maxAngle = maxAngle;
  const SamResult result = runQuietly(options);
  QCOMPARE(result.validPixels, scene.cube.pixels() - 6);
  const double worst = checkAgainstReference(scene.cube, scene.library, dir + "/classes.tif",
                                             dir + "/angles.tif", maxAngle);
  qInfo("largest angle difference %.3g rad", worst);
  QVERIFY2(worst <= 1e-12, qPrintable(QString::number(worst)));
  const std::vector<double> best = testing::samplesOf(dir + "/angle.tif");
  if (type == GDT_Float64)  // the library's own spectra, scaled: angle 0
    for (const int64_t p : scene.exact)
      QVERIFY2(best[p] <= 1e-12, qPrintable(QString::number(best[p])));
  QVERIFY(std::isnan(best[scene.zero]));
  for (const int64_t p : scene.invalid) QVERIFY(std::isnan(best[p]));
  // The counts add up to the valid pixels; the table names the spectra.
  int64_t counted = 0;
  for (const int64_t c : result.classCounts) counted += c;
  QCOMPARE(counted, result.validPixels);
  QFile counts(dir + "/counts.csv");
  QVERIFY(counts.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = counts.readAll().trimmed().split('\n');
  QCOMPARE(lines.size(), 7);
  QVERIFY(lines[3].startsWith("2,mineral 2," +
                              QByteArray::number(static_cast<qlonglong>(result.classCounts[2]))));
  // The class map names and colours its classes.
  const std::unique_ptr<GDALDataset> map = testing::openReadOnly(dir + "/classes.tif");
  GDALRasterBand* band = map->GetRasterBand(1);
  QCOMPARE(band->GetRasterDataType(), GDT_UInt16);
  QVERIFY(band->GetColorTable() && band->GetColorTable()->GetColorEntryCount() >= 6);
  char** names = band->GetCategoryNames();
  QVERIFY(names && CSLCount(names) == 6);
  QCOMPARE(QString(names[3]), QString("mineral 3"));
  // The report names the classes with their counts, and holds the map and the two plots.
  QFile report(dir + "/report.html");
  QVERIFY(report.open(QIODevice::ReadOnly));
  const QString page = QString::fromUtf8(report.readAll());
  QVERIFY(page.contains("mineral 5") && page.contains("data:image/png;base64,"));
  QCOMPARE(page.count("<svg"), 2);
  QVERIFY(page.contains(QString("<td>%1</td>").arg(result.classCounts[2])));
  // The histogram holds every valid pixel with an angle (the zero pixel has none).
  int64_t binned = 0;
  for (const int64_t n : result.angleHistogram) binned += n;
  QCOMPARE(binned, result.validPixels - 1);
}

// Strips of 1, 7 and all rows, a 16 MiB budget, pixel- and band-interleaved files: the same bits.
void TestSam::stripsAndLayoutsGiveTheSameBits() {
  const Scene scene = mixedScene(41, 29, 60, 4, 11);
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/pixel.tif").toStdString(), GDT_Float32);
  testing::writeCube(scene.cube, (dir + "/band.tif").toStdString(), GDT_Float32, "GTiff",
                     {"INTERLEAVE=BAND"});
  writeCsvLibrary(scene.library, dir + "/library.csv");
  std::vector<double> firstClasses, firstAngles;
  for (const QString& file : {QString("pixel"), QString("band")})
    for (const int strip : {0, 1, 7, 41}) {
      const QString out = dir + QString("/%1_%2").arg(file).arg(strip);
      SamOptions options =
          samOptions(dir + "/" + file + ".tif", dir + "/library.csv", out + "_classes.tif");
      options.anglesOutput = (out + "_angles.tif").toStdString();
      options.stripRows = strip;
      if (strip == 7) options.ramBytes = 16ll << 20;
      runQuietly(options);
      const std::vector<double> classes = testing::samplesOf(out + "_classes.tif");
      const std::vector<double> angles = testing::samplesOf(out + "_angles.tif");
      if (firstClasses.empty()) {
        firstClasses = classes;
        firstAngles = angles;
      } else {
        QVERIFY2(classes == firstClasses, qPrintable(out));
        QVERIFY2(
            angles.size() == firstAngles.size() &&  // bitwise: NaN where invalid
                std::memcmp(angles.data(), firstAngles.data(), angles.size() * sizeof(double)) == 0,
            qPrintable(out));
      }
    }
}

// An ENVI .sli on a fine grid (2 nm, micrometres in the header, both byte orders, one channel
// ignored) resampled to 10 nm bands of 12 nm FWHM: within 1e-7 of the numerically integrated
// reference (float32 library values), and the pixels made of those spectra classified as them.
void TestSam::enviLibraryResampled() {
  std::vector<double> fine;
  for (double w = 380; w <= 2520; w += 2) fine.push_back(w);
  std::vector<std::vector<double>> spectra(3);
  for (int k = 0; k < 3; ++k)
    for (const double w : fine) spectra[k].push_back(syntheticSpectrum(k, w));
  spectra[1][400] = std::nan("");  // 1180 nm: ignored, its neighbours carry the band
  // float32 as the file holds them
  for (auto& s : spectra)
    for (double& v : s)
      if (!std::isnan(v)) v = static_cast<float>(v);
  std::vector<double> bands;
  for (double w = 420; w <= 2450; w += 10) bands.push_back(w);
  const auto n = static_cast<int>(bands.size());
  std::vector<std::vector<double>> expected(3);
  for (int k = 0; k < 3; ++k)
    for (const double w : bands) expected[k].push_back(referenceBandValue(fine, spectra[k], w, 12));
  // The scene: each row one library spectrum (as the image's bands would see it) scaled.
  testing::Cube cube;
  cube.rows = 6;
  cube.cols = 5;
  cube.bands = n;
  cube.nodata.assign(n, std::nan(""));
  for (int64_t p = 0; p < cube.pixels(); ++p)
    for (int b = 0; b < n; ++b) cube.values.push_back((1 + p) * expected[p % 3][b]);
  const QString dir = testing::tempDir();
  testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float64);
  setWavelengths(dir + "/in.tif", bands, 12);
  for (const bool bigEndian : {false, true}) {
    const QString stem = dir + (bigEndian ? "/big" : "/little");
    writeSli(stem, fine, spectra, {"calcite", "kaolinite KGa-1", "alunite"}, bigEndian);
    const SpectralLibrary library = readSpectralLibrary({(stem + ".sli").toStdString(), ""});
    QCOMPARE(library.spectra[1].name, std::string("kaolinite KGa-1"));
    QCOMPARE(library.wavelengths.front(), 380.0);
    const RasterInfo info = [&] {
      const DatasetPtr dataset = openRaster((dir + "/in.tif").toStdString(), "INPUT");
      return describeRaster(*dataset, (dir + "/in.tif").toStdString());
    }();
    std::vector<int> all(n);
    std::iota(all.begin(), all.end(), 1);
    const std::vector<Target> resampled = libraryOnBands(library, info, all);
    double worst = 0;
    for (int k = 0; k < 3; ++k)
      for (int b = 0; b < n; ++b)
        worst = std::max(worst, std::fabs(resampled[k].spectrum[b] / expected[k][b] - 1));
    qInfo("ENVI library resampled: largest relative difference %.3g", worst);
    QVERIFY2(worst < 1e-12, qPrintable(QString::number(worst)));
    SamOptions options = samOptions(dir + "/in.tif", stem + ".hdr", dir + "/classes.tif");
    options.angleOutput = (dir + "/angle.tif").toStdString();
    runQuietly(options);
    const std::vector<double> classes = testing::samplesOf(dir + "/classes.tif");
    const std::vector<double> angles = testing::samplesOf(dir + "/angle.tif");
    for (int64_t p = 0; p < cube.pixels(); ++p) {
      QCOMPARE(classes[p], static_cast<double>(p % 3 + 1));
      QVERIFY2(angles[p] < 1e-6, qPrintable(QString::number(angles[p])));
    }
  }
}

// USGS splib07 ASCII: a folder of spectra (titles, deleted channels -1.23e34) with the
// wavelength file inside it (left out as a list of channels), in micrometres; a band inside
// the deleted water window is refused naming LIBRARY and the band.
void TestSam::usgsFolderResampled() {
  const QString dir = testing::tempDir();
  QDir().mkpath(dir + "/usgs");
  std::vector<double> channels;
  for (double w = 350; w <= 2500; w += 1) channels.push_back(w);
  QByteArray wavelengthFile = "splib07a Record=2: Wavelengths ASD 0.35-2.5 microns 2151 ch\n";
  for (const double w : channels) wavelengthFile += QByteArray::number(w / 1000, 'f', 6) + "\n";
  writeText(dir + "/usgs/splib07a_Wavelengths_ASD_0.35-2.5_microns_2151_ch.txt", wavelengthFile);
  const char* titles[] = {"splib07a Record=1234: Alunite GDS84 Na03       ASDFRa AREF",
                          "splib07a Record=5678: Kaolinite CM9           ASDFRb AREF"};
  std::vector<std::vector<double>> spectra(2);
  for (int k = 0; k < 2; ++k) {
    QByteArray file = QByteArray(titles[k]) + "\n";
    for (const double w : channels) {
      const bool deleted = (w >= 1350 && w <= 1450) || (k == 1 && w == 2000);
      spectra[k].push_back(deleted ? std::nan("") : syntheticSpectrum(k, w));
      file += deleted ? QByteArray("-1.23e34\n")
                      : QByteArray::number(syntheticSpectrum(k, w), 'e', 10) + "\n";
    }
    writeText(dir + QString("/usgs/s07_%1.txt").arg(k), file);
    // read back as the file holds them (10 significant digits)
    for (double& v : spectra[k])
      if (!std::isnan(v)) v = QByteArray::number(v, 'e', 10).toDouble();
  }
  std::vector<double> bands;
  for (double w = 400; w <= 2400; w += 9.7) bands.push_back(w);
  testing::Cube cube;
  cube.rows = 2;
  cube.cols = 3;
  cube.bands = static_cast<int>(bands.size());
  std::vector<int> selected;
  for (int b = 0; b < cube.bands; ++b)
    if (bands[b] < 1320 || bands[b] > 1480) selected.push_back(b + 1);
  cube.nodata.assign(cube.bands, std::nan(""));
  for (int64_t p = 0; p < cube.pixels(); ++p)
    for (const double w : bands) cube.values.push_back(0.5 + w / 1e4 + 0.01 * p);
  testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
  setWavelengths(dir + "/in.tif", bands, 11);

  const LibraryFiles files{
      (dir + "/usgs").toStdString(),
      (dir + "/usgs/splib07a_Wavelengths_ASD_0.35-2.5_microns_2151_ch.txt").toStdString()};
  const SpectralLibrary library = readSpectralLibrary(files);
  QCOMPARE(library.spectra.size(), size_t{2});
  QCOMPARE(library.spectra[0].name, std::string("Alunite GDS84 Na03 ASDFRa AREF"));
  QCOMPARE(library.wavelengths[100], 450.0);
  const DatasetPtr dataset = openRaster((dir + "/in.tif").toStdString(), "INPUT");
  const RasterInfo info = describeRaster(*dataset, (dir + "/in.tif").toStdString());
  const std::vector<Target> resampled = libraryOnBands(library, info, selected);
  double worst = 0;
  for (int k = 0; k < 2; ++k)
    for (size_t i = 0; i < selected.size(); ++i) {
      const double expected =
          referenceBandValue(library.wavelengths, spectra[k], bands[selected[i] - 1], 11);
      worst = std::max(worst, std::fabs(resampled[k].spectrum[i] / expected - 1));
    }
  qInfo("USGS library resampled: largest relative difference %.3g", worst);
  QVERIFY2(worst < 1e-12, qPrintable(QString::number(worst)));
  // Every band: the ones in the water window are refused, naming one.
  std::vector<int> every(cube.bands);
  std::iota(every.begin(), every.end(), 1);
  try {
    libraryOnBands(library, info, every);
    QFAIL("a band in the deleted window was resampled");
  } catch (const Error& error) {
    QCOMPARE(error.parameter(), std::string("LIBRARY"));
    QVERIFY2(QString(error.what()).contains("(13"), error.what());  // 13xx nm
  }
  // The job with its selected bands.
  SamOptions options = samOptions(dir + "/in.tif", dir + "/usgs", dir + "/classes.tif");
  options.library.wavelengths = files.wavelengths;
  for (const int b : selected) options.bands.emplace_back(b);
  const SamResult result = runQuietly(options);
  QCOMPARE(result.library.size(), size_t{2});
  QCOMPARE(result.validPixels, int64_t{6});
}

// Jasper Ridge (AVIRIS, uint16 DN) against a table of four of its own pixels: classes
// identical, angles within 1e-12 of the reference.
void TestSam::realSceneMatchesReference() {
  const QString data = testing::sharedDataDir();
  if (data.isEmpty()) QSKIP("../shared/data is absent");
  const QString input = data + "/jasper_ridge_100x100x198_uint16.tif";
  const testing::Cube cube = testing::readCube(input.toStdString());
  std::vector<std::vector<double>> library;
  for (const int64_t p : {1234, 4321, 7777, 9001})
    library.emplace_back(cube.values.begin() + p * cube.bands,
                         cube.values.begin() + (p + 1) * cube.bands);
  const QString dir = testing::tempDir();
  writeCsvLibrary(library, dir + "/library.csv");
  SamOptions options = samOptions(input, dir + "/library.csv", dir + "/classes.tif");
  options.anglesOutput = (dir + "/angles.tif").toStdString();
  options.maxAngle = 0.12;
  runQuietly(options);
  const double worst =
      checkAgainstReference(cube, library, dir + "/classes.tif", dir + "/angles.tif", 0.12);
  qInfo("Jasper Ridge SAM: largest angle difference %.3g rad", worst);
  QVERIFY2(worst <= 1e-12, qPrintable(QString::number(worst)));
}

void TestSam::clearErrors() {
  const Scene scene = mixedScene(12, 10, 20, 3, 5);
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), GDT_Float32);
  writeCsvLibrary(scene.library, dir + "/library.csv");
  const QString out = dir + "/out.tif";
  auto parameterOf = [&](const SamOptions& options) {
    return errorParameter([&] { runQuietly(options); });
  };
  QCOMPARE(parameterOf(samOptions(dir + "/in.tif", dir + "/none.csv", out)),
           std::string("LIBRARY"));
  // A table of other bands.
  std::vector<std::vector<double>> shorter = scene.library;
  for (auto& s : shorter) s.pop_back();
  writeCsvLibrary(shorter, dir + "/short.csv");
  QCOMPARE(parameterOf(samOptions(dir + "/in.tif", dir + "/short.csv", out)),
           std::string("LIBRARY"));
  // A zero spectrum has no direction.
  std::vector<std::vector<double>> zero = scene.library;
  std::fill(zero[1].begin(), zero[1].end(), 0.0);
  writeCsvLibrary(zero, dir + "/zero.csv");
  QCOMPARE(parameterOf(samOptions(dir + "/in.tif", dir + "/zero.csv", out)),
           std::string("LIBRARY"));
  // USGS spectra without their wavelengths; an image without wavelengths for a .sli.
  writeText(dir + "/one.txt", "splib07a Record=1: Quartz\n0.5\n0.6\n");
  QCOMPARE(parameterOf(samOptions(dir + "/in.tif", dir + "/one.txt", out)),
           std::string("LIBRARY_WAVELENGTHS"));
  writeSli(dir + "/lib", {400, 500, 600}, {{1, 2, 3}}, {"a"}, false);
  QCOMPARE(parameterOf(samOptions(dir + "/in.tif", dir + "/lib.sli", out)), std::string("INPUT"));
  // A crafted header: more values than the file holds, or than any library has.
  QFile::remove(dir + "/lib.hdr");
  writeText(dir + "/lib.hdr",
            "ENVI\nsamples = 3\nlines = 1000000\nbands = 1\nfile type = ENVI Spectral Library\n"
            "data type = 4\n");
  QCOMPARE(parameterOf(samOptions(dir + "/in.tif", dir + "/lib.sli", out)), std::string("LIBRARY"));
  writeText(dir + "/lib.hdr",
            "ENVI\nsamples = 3\nlines = 2\nbands = 1\nfile type = ENVI Spectral Library\n"
            "data type = 4\n");
  QCOMPARE(parameterOf(samOptions(dir + "/in.tif", dir + "/lib.sli", out)), std::string("LIBRARY"));
  writeText(dir + "/lib.hdr",
            "ENVI\nsamples = 3\nlines = 1\nbands = 1\nfile type = ENVI Standard\n"
            "data type = 4\n");
  QCOMPARE(parameterOf(samOptions(dir + "/in.tif", dir + "/lib.sli", out)), std::string("LIBRARY"));
  SamOptions angle = samOptions(dir + "/in.tif", dir + "/library.csv", out);
  angle.maxAngle = 0;
  QCOMPARE(parameterOf(angle), std::string("MAX_ANGLE"));
  SamOptions type = samOptions(dir + "/in.tif", dir + "/library.csv", out);
  type.outputType = OutputType::Int16;
  QCOMPARE(parameterOf(type), std::string("OUTPUT_TYPE"));
  // Nothing half-written: only the inputs are left.
  QVERIFY(!QFile::exists(out));
  QCOMPARE(parameterOf(samOptions(dir + "/in.tif", dir + "/library.csv", out)),
           std::string("none"));
  QVERIFY(QFile::exists(out));
}

// Detection's targets given as a spectral library on wavelengths (a methane-like absorption on a
// 1 nm grid, in micrometres, as an ENVI .sli): the matched filter, per column and image-wide,
// writes the same bits as with the spectrum resampled to the bands given band by band.
void TestSam::detectionTargetsFromALibrary() {
  std::vector<double> fine;
  for (double w = 380; w <= 2520; w += 1) fine.push_back(w);
  std::vector<double> absorption;
  absorption.reserve(fine.size());
  for (const double w : fine)
    absorption.push_back(
        0.02 * (std::exp(-std::pow((w - 2300) / 6, 2)) + std::exp(-std::pow((w - 2350) / 6, 2))));
  std::vector<double> bands;
  for (double w = 2100; w <= 2480; w += 10) bands.push_back(w);
  Scene scene = mixedScene(40, 12, static_cast<int>(bands.size()), 4, 17);
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), GDT_Float32);
  setWavelengths(dir + "/in.tif", bands, 10);
  writeSli(dir + "/ch4", fine, {absorption}, {"CH4 per ppm m"}, false);
  const DetectTargets library = readTargets({(dir + "/ch4.sli").toStdString(), ""});
  QCOMPARE(library.wavelengths.size(), fine.size());
  // The same spectrum on the bands, given band by band.
  const DatasetPtr dataset = openRaster((dir + "/in.tif").toStdString(), "INPUT");
  const RasterInfo info = describeRaster(*dataset, (dir + "/in.tif").toStdString());
  std::vector<int> all(bands.size());
  std::iota(all.begin(), all.end(), 1);
  const DetectTargets onBands{{}, targetsForImage(library, info, all), {}};
  QCOMPARE(onBands.targets.front().name, std::string("CH4 per ppm m"));
  for (const bool perColumn : {true, false}) {
    std::vector<double> written[2];
    for (int given = 0; given < 2; ++given) {
      const QString output = dir + QString("/mf_%1_%2.tif").arg(perColumn).arg(given);
      DetectOptions options;
      options.input = (dir + "/in.tif").toStdString();
      options.output = output.toStdString();
      options.outputType = OutputType::Float64;
      options.device = DeviceChoice::cpu();
      options.detector.method = DetectMethod::MatchedFilter;
      options.detector.absorption = true;
      options.detector.shrinkage = 1e-6;
      options.targetTable = given ? onBands : library;
      TestFeedback feedback;
      if (perColumn)
        runColumnDetection(perColumnOptions(options), feedback);
      else
        runDetection(options, feedback);
      written[given] = testing::samplesOf(output);
    }
    QVERIFY(written[0].size() == written[1].size() &&
            std::memcmp(written[0].data(), written[1].data(), written[0].size() * sizeof(double)) ==
                0);
  }
  // USGS spectra as targets need their wavelengths.
  writeText(dir + "/one.txt", "splib07a Record=1: Methane\n0.5\n0.6\n");
  QCOMPARE(errorParameter([&] {
             readTargets({(dir + "/one.txt").toStdString(), ""});
           }),
           std::string("TARGET_WAVELENGTHS"));
}

// One rule for tables of spectra (spectra/SpectralLibrary.h) in SAM, detection and abundances: a
// generated scene's spectra by column (synth --truth) equal the truth on the bands; the
// endmembers' table without its positions and its point layer give the same spectra; "band N"
// columns follow a band selection; a table that gives only some bands is refused by all three,
// each naming its own parameter.
void TestSam::tablesOfSpectraOneRule() {
  const QString dir = testing::tempDir();
  SynthOptions synth;
  synth.output = (dir + "/scene.tif").toStdString();
  synth.rows = synth.cols = 30;
  synth.bands = 40;
  synth.endmembers = 3;
  synth.writeTruth = true;
  TestFeedback feedback;
  const SynthResult truth = synthesizeScene(synth, feedback);
  const DatasetPtr dataset = openRaster(synth.output, "INPUT");
  const RasterInfo info = describeRaster(*dataset, synth.output);
  std::vector<int> all(40), some{2, 5, 6, 30};
  std::iota(all.begin(), all.end(), 1);
  // By column: on the bands' own wavelengths, the values as they are.
  const std::vector<Target> byColumn =
      libraryOnBands(readSpectralLibrary({truth.endmembersPath, "", ""}), info, all, "LIBRARY");
  const std::vector<double> spectra = endmemberSpectra(3, truth.wavelengthsNm, synth.seed);
  QCOMPARE(byColumn.size(), size_t{3});
  for (int e = 0; e < 3; ++e)
    for (int b = 0; b < 40; ++b)
      QVERIFY2(std::abs(byColumn[e].spectrum[b] - spectra[e * 40 + b]) <= 1e-9,
               qPrintable(QString("%1 %2 %3")
                              .arg(b)
                              .arg(byColumn[e].spectrum[b], 0, 'g', 12)
                              .arg(spectra[e * 40 + b], 0, 'g', 12)));
  // The endmembers' table, its points, and the table without row and col.
  EndmemberOptions endmembers;
  endmembers.input = synth.output;
  endmembers.output = (dir + "/em.csv").toStdString();
  endmembers.pointsOutput = (dir + "/em.gpkg").toStdString();
  endmembers.search.count = 3;
  runEndmembers(endmembers, feedback);
  QFile table(dir + "/em.csv");
  QVERIFY(table.open(QIODevice::ReadOnly));
  QStringList lines = QString::fromUtf8(table.readAll()).trimmed().split('\n');
  QStringList withoutPositions, numbered;
  for (const QString& line : lines) {
    QStringList fields = line.split(',');
    fields.removeAt(1);
    fields.removeAt(1);
    withoutPositions << fields.join(',');
    if (numbered.isEmpty())
      for (int b = 1; b < fields.size(); ++b) fields[b] = QString("band %1").arg(b);
    numbered << fields.join(',');
  }
  writeText(dir + "/nopos.csv", (withoutPositions.join('\n') + '\n').toUtf8());
  writeText(dir + "/numbered.csv", (numbered.join('\n') + '\n').toUtf8());
  const auto onBands = [&](const QString& file, const std::vector<int>& bands) {
    return libraryOnBands(readSpectralLibrary({file.toStdString(), "", ""}), info, bands,
                          "LIBRARY");
  };
  const std::vector<Target> fromTable = onBands(dir + "/em.csv", all);
  for (const QString& other : {dir + "/nopos.csv", dir + "/em.gpkg", dir + "/numbered.csv"}) {
    const std::vector<Target> same = onBands(other, all);
    QCOMPARE(same.size(), fromTable.size());
    for (size_t e = 0; e < same.size(); ++e) {
      QCOMPARE(same[e].name, fromTable[e].name);
      QVERIFY2(same[e].spectrum == fromTable[e].spectrum, qPrintable(other));
    }
  }
  // Selected bands: named columns and "band N" columns give the same values.
  const std::vector<Target> named = onBands(dir + "/em.csv", some);
  const std::vector<Target> byNumber = onBands(dir + "/numbered.csv", some);
  for (size_t e = 0; e < named.size(); ++e) {
    QCOMPARE(named[e].spectrum.size(), some.size());
    QVERIFY(named[e].spectrum == byNumber[e].spectrum);
    for (size_t i = 0; i < some.size(); ++i)
      QCOMPARE(named[e].spectrum[i], fromTable[e].spectrum[some[i] - 1]);
  }
  // A table of six of the forty bands: refused by each algorithm, naming its own parameter.
  QStringList six;
  for (const QString& line : lines) six << line.split(',').mid(0, 9).join(',');
  writeText(dir + "/six.csv", (six.join('\n') + '\n').toUtf8());
  const std::string partial = (dir + "/six.csv").toStdString();
  SamOptions sam = samOptions(dir + "/scene.tif", dir + "/six.csv", dir + "/classes.tif");
  QCOMPARE(errorParameter([&] { runQuietly(sam); }), std::string("LIBRARY"));
  DetectOptions detect;
  detect.input = synth.output;
  detect.output = (dir + "/scores.tif").toStdString();
  detect.detector.method = DetectMethod::Ace;
  detect.targetTable = readTargets({partial, "", ""});
  SilentFeedback silent;
  QCOMPARE(errorParameter([&] { runDetection(detect, silent); }), std::string("TARGETS"));
  AbundanceOptions abundances;
  abundances.input = synth.output;
  abundances.endmembers = partial;
  abundances.output = (dir + "/ab.tif").toStdString();
  std::string message;
  try {
    runAbundances(abundances, silent);
  } catch (const Error& error) {
    QCOMPARE(error.parameter(), std::string("ENDMEMBERS"));
    message = error.what();
  }
  QVERIFY2(QString::fromStdString(message).contains("give 6 of the 40 selected bands"),
           message.c_str());
  for (const char* name : {"/classes.tif", "/scores.tif", "/ab.tif"})
    QVERIFY(!QFile::exists(dir + name));
  // A column that names no band of the image, and two spectra of one name: refused.
  QStringList extra;
  for (const QString& line : lines) extra << line + (extra.isEmpty() ? ",notes" : ",1");
  writeText(dir + "/extra.csv", (extra.join('\n') + '\n').toUtf8());
  QCOMPARE(errorParameter([&] { onBands(dir + "/extra.csv", all); }), std::string("LIBRARY"));
  writeText(dir + "/twice.csv", (lines.join('\n') + '\n' + lines.back() + '\n').toUtf8());
  QCOMPARE(errorParameter([&] { onBands(dir + "/twice.csv", all); }), std::string("LIBRARY"));
}

// A Float32 .sli whose data ignore value is USGS's -1.23e34: the channels holding it (the
// float nearest, not the double) are no values; a header whose ignore value is no number is
// refused naming LIBRARY.
void TestSam::usgsFillInAnEnviLibrary() {
  const QString dir = testing::tempDir();
  writeSli(dir + "/lib", {400, 500, 600, 700}, {{0.1, 0.2, std::nan(""), 0.4}}, {"a"}, false);
  QFile header(dir + "/lib.hdr");
  QVERIFY(header.open(QIODevice::ReadOnly));
  QByteArray text = header.readAll();
  header.close();
  QVERIFY(header.open(QIODevice::WriteOnly | QIODevice::Truncate));
  header.write(QByteArray(text).replace("data ignore value = -1", "data ignore value = -1.23e34"));
  header.close();
  QFile data(dir + "/lib.sli");
  QVERIFY(data.open(QIODevice::ReadWrite));
  const float fill = -1.23e34F;
  data.seek(qint64{2} * 4);
  data.write(reinterpret_cast<const char*>(&fill), 4);
  data.close();
  const SpectralLibrary library = readSpectralLibrary({(dir + "/lib.sli").toStdString(), "", ""});
  QCOMPARE(library.spectra.size(), size_t{1});
  QVERIFY(std::isnan(library.spectra[0].spectrum[2]));
  QCOMPARE(library.spectra[0].spectrum[3], static_cast<double>(0.4F));
  QVERIFY(header.open(QIODevice::WriteOnly | QIODevice::Truncate));
  header.write(QByteArray(text).replace("data ignore value = -1", "data ignore value = abc"));
  header.close();
  QCOMPARE(errorParameter([&] {
             readSpectralLibrary({(dir + "/lib.sli").toStdString(), "", ""});
           }),
           std::string("LIBRARY"));
}

QTEST_GUILESS_MAIN(TestSam)
#include "test_sam.moc"
