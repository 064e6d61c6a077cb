// The same image in every layout a user's file may have (compressed, tiled, pixel- and
// band-interleaved, blocks of odd sizes, strips that cut across blocks) gives bitwise the same PCA
// and SPP as the plain file, and a compressed file is read within the RAM budget.

#include "DeviceOption.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "io/PendingRaster.h"
#include "io/Raster.h"
#include "pca/PcaJob.h"
#include "spp/SppJob.h"
#include "synth/Synth.h"
#include "unmixing/AbundanceJob.h"
#include "unmixing/EndmemberJob.h"

#include <gdal_utils.h>

#include <QFileInfo>
#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace hyperstream;

namespace {

struct Layout {
  const char* name;
  std::vector<std::string> creationOptions;
  const char* format = "GTiff";
};

const std::vector<Layout>& layouts() {
  static const std::vector<Layout> all = {
      {"deflate_pixel_tiles_128x64",
       {"COMPRESS=DEFLATE", "INTERLEAVE=PIXEL", "TILED=YES", "BLOCKXSIZE=128", "BLOCKYSIZE=64"}},
      {"zstd_band_tiles_32x16",
       {"COMPRESS=ZSTD", "INTERLEAVE=BAND", "TILED=YES", "BLOCKXSIZE=32", "BLOCKYSIZE=16"}},
      {"lzw_pixel_strips_of_7", {"COMPRESS=LZW", "INTERLEAVE=PIXEL", "BLOCKYSIZE=7"}},
      {"deflate_band_strips", {"COMPRESS=DEFLATE", "INTERLEAVE=BAND"}},
      {"zstd_pixel_one_tile",
       {"COMPRESS=ZSTD", "INTERLEAVE=PIXEL", "TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=256"}},
      {"plain_tiles_48x80", {"INTERLEAVE=PIXEL", "TILED=YES", "BLOCKXSIZE=48", "BLOCKYSIZE=80"}},
      // Uncompressed: pixel-interleaved strips, band strips of several rows (read as runs of the
      // file, band-major), raw band- and line-interleaved files (GDAL's raw layout).
      {"plain_pixel_strips", {"INTERLEAVE=PIXEL"}},
      {"plain_band_strips_of_7", {"INTERLEAVE=BAND", "BLOCKYSIZE=7"}},
      {"envi_bsq", {"INTERLEAVE=BSQ"}, "ENVI"},
      {"envi_bil", {"INTERLEAVE=BIL"}, "ENVI"},
  };
  return all;
}

// 203 x 157 pixels: no block size above divides it. Nodata pixels, a NaN and a constant band.
testing::Cube nastyCube(GDALDataType type) {
  testing::Cube cube = testing::correlatedCube(203, 157, 9, 11, 3000.0);
  testing::roundValues(cube);
  const double nodata = type == GDT_UInt16 ? 65535.0 : -9999.0;
  cube.nodata.assign(9, nodata);
  for (int b = 0; b < 9; ++b) cube.at(70, 40, b) = nodata;
  for (int64_t c = 0; c < cube.cols; ++c) cube.at(130, c, 3) = nodata;
  for (int64_t p = 0; p < cube.pixels(); ++p) cube.values[p * 9 + 8] = 42.0;
  if (type == GDT_Float32) cube.at(5, 6, 2) = NAN;
  return cube;
}

struct Written {
  std::vector<double> eigenvalues;
  testing::Cube pixels;
};

Written pca(const QString& input, const QString& output, int64_t stripRows,
            int64_t ramBytes = int64_t{1024} << 20) {
  PcaOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.device = parseDevice("cpu");
  options.components = 4;
  options.stripRows = stripRows;
  options.ramBytes = ramBytes;
  TestFeedback feedback;
  Written written;
  written.eigenvalues = runPca(options, feedback).model.eigenvalues;
  written.pixels = testing::readCube(options.output);
  return written;
}

testing::Cube spp(const QString& input, const QString& output, int64_t stripRows,
                  int64_t ramBytes = int64_t{1024} << 20) {
  SppOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.device = parseDevice("cpu");
  options.window = 5;
  options.stripRows = stripRows;
  options.ramBytes = ramBytes;
  TestFeedback feedback;
  runSpp(options, feedback);
  return testing::readCube(options.output);
}

// gdal_translate SOURCE TARGET -co OPTION...
// The demo scene, 700 x 600 x 80 UInt16 (67 MB), as plain.tif in `dir`.
SynthOptions sceneOf700x600(const QString& dir) {
  SynthOptions synth;
  synth.output = (dir + "/plain.tif").toStdString();
  synth.rows = 700;
  synth.cols = 600;
  synth.bands = 80;
  synth.type = GDT_UInt16;
  TestFeedback quiet;
  synthesizeScene(synth, quiet);
  return synth;
}

void compress(const std::string& source, const std::string& target,
              const std::vector<std::string>& creationOptions) {
  CPLStringList arguments;
  for (const std::string& option : creationOptions) {
    arguments.AddString("-co");
    arguments.AddString(option.c_str());
  }
  GDALTranslateOptions* options = GDALTranslateOptionsNew(arguments.List(), nullptr);
  GDALDatasetH in = GDALOpen(source.c_str(), GA_ReadOnly);
  GDALDatasetH out = GDALTranslate(target.c_str(), in, options, nullptr);
  QVERIFY(out);
  GDALClose(out);
  GDALClose(in);
  GDALTranslateOptionsFree(options);
}

bool sameValues(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

}  // namespace

class LayoutTests : public QObject {
  Q_OBJECT

 private slots:
  void everyLayoutGivesThePlainFilesResults_data() {
    QTest::addColumn<int>("type");
    QTest::newRow("uint16") << int(GDT_UInt16);
    QTest::newRow("float32") << int(GDT_Float32);
  }
  void everyLayoutGivesThePlainFilesResults() {
    QFETCH(int, type);
    const testing::Cube cube = nastyCube(static_cast<GDALDataType>(type));
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/plain.tif").toStdString(), static_cast<GDALDataType>(type),
                       "GTiff", {"INTERLEAVE=BAND"});
    const Written plainPca = pca(dir + "/plain.tif", dir + "/plain_pca.tif", 0);
    const testing::Cube plainSpp = spp(dir + "/plain.tif", dir + "/plain_spp.tif", 0);
    for (const Layout& layout : layouts()) {
      const QString input =
          dir + "/" + layout.name + (QByteArray(layout.format) == "ENVI" ? ".img" : ".tif");
      testing::writeCube(cube, input.toStdString(), static_cast<GDALDataType>(type), layout.format,
                         layout.creationOptions);
      // Planned strips, and strips that divide no block height (and one row).
      for (int64_t stripRows : {0, 1, 5, 37}) {
        const QByteArray what = QByteArray(layout.name) + ", strips of " +
                                QByteArray::number(static_cast<qlonglong>(stripRows));
        const Written layoutPca = pca(input, dir + "/pca.tif", stripRows);
        QVERIFY2(layoutPca.eigenvalues == plainPca.eigenvalues, what);
        QVERIFY2(sameValues(layoutPca.pixels.values, plainPca.pixels.values), what);
        QVERIFY2(sameValues(spp(input, dir + "/spp.tif", stripRows).values, plainSpp.values), what);
      }
    }
  }

  // Outputs in every layout hold, bit for bit, the samples written, whatever the strips: the
  // uncompressed ones written straight into the file (RawWriter), the others through GDAL; GDAL
  // reads the rows back before the raster is committed (reports do) and after.
  void everyOutputLayoutHoldsTheSamples_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("bands");
    QTest::newRow("uint16, 9 bands") << int(GDT_UInt16) << 9;
    QTest::newRow("float32, 1 band") << int(GDT_Float32) << 1;
    QTest::newRow("float64, 4 bands") << int(GDT_Float64) << 4;
    QTest::newRow("byte, 3 bands") << int(GDT_Byte) << 3;
  }
  void everyOutputLayoutHoldsTheSamples() {
    QFETCH(int, type);
    QFETCH(int, bands);
    const auto gdalType = static_cast<GDALDataType>(type);
    const int64_t rows = 157, cols = 203;
    testing::Cube cube = testing::correlatedCube(rows, cols, bands, 5, 100.0);
    testing::roundValues(cube);
    const int size = GDALGetDataTypeSizeBytes(gdalType);
    std::vector<unsigned char> samples(static_cast<size_t>(cube.values.size()) * size);
    for (size_t i = 0; i < cube.values.size(); ++i) {
      cube.values[i] = std::fmod(std::fabs(cube.values[i]), 250.0);
      GDALCopyWords64(&cube.values[i], GDT_Float64, 0, samples.data() + i * size, gdalType, 0, 1);
    }
    std::vector<Layout> outputs = layouts();
    outputs.push_back({"envi_bip", {"INTERLEAVE=BIP"}, "ENVI"});
    outputs.push_back({"plain_sparse_ok", {"SPARSE_OK=TRUE"}});
    const QString dir = testing::tempDir();
    TestFeedback feedback;
    for (const Layout& layout : outputs) {
      const bool plain = std::none_of(
          layout.creationOptions.begin(), layout.creationOptions.end(), [](const std::string& o) {
            return o.rfind("COMPRESS=", 0) == 0 || o == "TILED=YES" || o == "SPARSE_OK=TRUE";
          });
      for (int64_t stripRows : {int64_t{1}, int64_t{5}, int64_t{37}, rows}) {
        const QByteArray what = QByteArray(layout.name) + ", strips of " +
                                QByteArray::number(static_cast<qlonglong>(stripRows));
        const std::string path = (dir + "/out_" + layout.name + ".dat").toStdString();
        PendingRaster raster(path, {outputDriver(path, layout.format), layout.creationOptions},
                             cols, rows, bands, gdalType);
        QVERIFY2(raster.writesStraight() == plain, what);
        const int64_t rowBytes = cols * bands * size;
        for (int64_t row = 0; row < rows; row += stripRows)
          raster.write(row, std::min(stripRows, rows - row), samples.data() + row * rowBytes,
                       feedback);
        std::vector<double> before(static_cast<size_t>(bands));
        QCOMPARE(raster.dataset().RasterIO(GF_Read, 17, 151, 1, 1, before.data(), 1, 1, GDT_Float64,
                                           bands, nullptr, 0, 0, 0),
                 CE_None);
        for (int b = 0; b < bands; ++b) QVERIFY2(before[b] == cube.at(151, 17, b), what);
        raster.commit();
        QVERIFY2(sameValues(testing::readCube(path).values, cube.values), what);
      }
    }
  }

  // A GeoTIFF none of whose blocks was ever written (SPARSE_OK): GDAL 3.6 gives it a raw layout
  // at offset 0, its header; every reader must read its samples as the zeros GDAL fills in.
  void sparseFileReadsAsZeros() {
    ensureGdalDrivers();
    const QString dir = testing::tempDir();
    for (const char* interleave : {"INTERLEAVE=BAND", "INTERLEAVE=PIXEL"}) {
      const std::string path = (dir + "/sparse.tif").toStdString();
      const char* options[] = {"SPARSE_OK=TRUE", interleave, nullptr};
      GDALClose(GetGDALDriverManager()->GetDriverByName("GTiff")->Create(
          path.c_str(), 203, 157, 3, GDT_UInt16, const_cast<char**>(options)));
      const DatasetPtr dataset = openRaster(path, "INPUT");
      const RasterInfo info = describeRaster(*dataset, path);
      for (bool bandMajor : {false, true}) {
        StripReader reader(info, {1, 2, 3}, 2, 64ll << 20, 0);
        std::vector<uint16_t> strip(size_t{37} * 203 * 3, 7);
        if (bandMajor)
          reader.readBandMajor(20, 37, strip.data());
        else
          reader.read(20, 37, strip.data());
        QVERIFY2(std::all_of(strip.begin(), strip.end(), [](uint16_t v) { return v == 0; }),
                 interleave);
      }
    }
  }

  // Strips that end inside the output's tiles: each tile is compressed and stored once, so the
  // file is no larger than GDAL's own copy of it with the same options.
  void compressedOutputStoresEachBlockOnce() {
    const testing::Cube cube = nastyCube(GDT_UInt16);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    const std::vector<std::string> tiled = {"COMPRESS=DEFLATE", "TILED=YES", "BLOCKXSIZE=64",
                                            "BLOCKYSIZE=64"};
    PcaOptions options;
    options.input = (dir + "/in.tif").toStdString();
    options.output = (dir + "/pca.tif").toStdString();
    options.device = parseDevice("cpu");
    options.components = 4;
    options.stripRows = 10;
    options.creationOptions = tiled;
    TestFeedback feedback;
    runPca(options, feedback);
    compress(options.output, (dir + "/copy.tif").toStdString(), tiled);
    const qint64 written = QFileInfo(dir + "/pca.tif").size();
    const qint64 copy = QFileInfo(dir + "/copy.tif").size();
    QVERIFY2(written <= copy + copy / 20, qPrintable(QString("%1 vs %2").arg(written).arg(copy)));
    QVERIFY(sameValues(testing::readCube(options.output).values,
                       testing::readCube((dir + "/copy.tif").toStdString()).values));
  }

  // A compressed file is read within the budget, by both jobs, and gives the plain file's
  // results, in each of the three ways: its cube stays in memory (512 MiB); it is streamed and
  // its blocks decompressed in each pass (64 MiB, 128 x 32 tiles); it is streamed and its blocks,
  // too large for the budget, are decompressed once into a temporary copy (64 MiB, 256 x 256).
  void compressedFileWithinTheBudget_data() {
    QTest::addColumn<int>("ramMiB");
    QTest::addColumn<int>("tileHeight");
    QTest::addColumn<bool>("copied");
    QTest::addColumn<QString>("interleave");
    QTest::newRow("in memory") << 512 << 256 << false << "PIXEL";
    QTest::newRow("decompressed in each pass") << 64 << 32 << false << "PIXEL";
    QTest::newRow("decompressed into a copy") << 64 << 256 << true << "PIXEL";
    // A band-interleaved file's copy is band-interleaved, its blocks taken one band at a time
    // (all bands at once made 445 MB at --ram 64 of 512 x 512 tiles of 198 bands).
    QTest::newRow("band tiles into a band-interleaved copy") << 64 << 256 << true << "BAND";
  }
  void compressedFileWithinTheBudget() {
    QFETCH(int, ramMiB);
    QFETCH(int, tileHeight);
    QFETCH(bool, copied);
    QFETCH(QString, interleave);
    const QString dir = testing::tempDir();
    const SynthOptions synth = sceneOf700x600(dir);
    const std::string input = (dir + "/scene.tif").toStdString();
    compress(synth.output, input,
             {"COMPRESS=DEFLATE", "TILED=YES", "INTERLEAVE=" + interleave.toStdString(),
              "BLOCKXSIZE=" + std::to_string(tileHeight == 256 ? 256 : 128),
              "BLOCKYSIZE=" + std::to_string(tileHeight)});
    const Written plainPca = pca(QString::fromStdString(synth.output), dir + "/plain_pca.tif", 0);
    const testing::Cube plainSpp =
        spp(QString::fromStdString(synth.output), dir + "/plain_spp.tif", 0);
    PcaOptions options;
    options.input = input;
    options.output = (dir + "/pca.tif").toStdString();
    options.device = parseDevice("cpu");
    options.components = 4;
    options.ramBytes = int64_t{ramMiB} << 20;
    TestFeedback pcaLog, sppLog;
    const int64_t pcaGrowth = testing::peakGrowth([&] { runPca(options, pcaLog); });
    SppOptions sppOptions;
    sppOptions.input = input;
    sppOptions.output = (dir + "/spp.tif").toStdString();
    sppOptions.device = parseDevice("cpu");
    sppOptions.window = 5;
    sppOptions.ramBytes = options.ramBytes;
    const int64_t sppGrowth = testing::peakGrowth([&] { runSpp(sppOptions, sppLog); });
    QCOMPARE(!pcaLog.infos.filter("temporary copy").isEmpty(), copied);
    QCOMPARE(!sppLog.infos.filter("temporary copy").isEmpty(), copied);
    QVERIFY(sameValues(testing::readCube(options.output).values, plainPca.pixels.values));
    QVERIFY(sameValues(testing::readCube(sppOptions.output).values, plainSpp.values));
    QVERIFY(testing::filesIn(dir).filter(".part").isEmpty());  // the copy is gone
    if (testing::underAddressSanitizer || pcaGrowth < 0)
      QSKIP("the peak resident size cannot be measured here");
    qInfo("peak grew by %.1f MiB (PCA), %.1f MiB (SPP)", pcaGrowth / 1048576.0,
          sppGrowth / 1048576.0);
    QVERIFY(pcaGrowth <= options.ramBytes + testing::kPeakSlackBytes);
    QVERIFY(sppGrowth <= options.ramBytes + testing::kPeakSlackBytes);
  }

  // Every job on tiles (plain and compressed) within its budget: tiles taller than a strip once
  // went through GDAL's block cache, dropped after every strip (denoise: 1.28 GB and 148 s at
  // --ram 64); endmembers decompressed every block in each pass and read each spectrum as a
  // whole tile.
  void everyJobOnTilesWithinTheBudget_data() {
    QTest::addColumn<QString>("compression");
    QTest::addColumn<QString>("interleave");
    QTest::newRow("plain pixel tiles") << "NONE"
                                       << "PIXEL";
    QTest::newRow("plain band tiles") << "NONE"
                                      << "BAND";
    QTest::newRow("deflate pixel tiles") << "DEFLATE"
                                         << "PIXEL";
    QTest::newRow("deflate band tiles") << "DEFLATE"
                                        << "BAND";
  }
  void everyJobOnTilesWithinTheBudget() {
    QFETCH(QString, compression);
    QFETCH(QString, interleave);
    const QString dir = testing::tempDir();
    const SynthOptions synth = sceneOf700x600(dir);
    TestFeedback quiet;
    const std::string input = (dir + "/tiles.tif").toStdString();
    compress(synth.output, input,
             {"COMPRESS=" + compression.toStdString(), "TILED=YES",
              "INTERLEAVE=" + interleave.toStdString(), "BLOCKXSIZE=256", "BLOCKYSIZE=256"});
    const int64_t ram = int64_t{32} << 20;
    auto within = [&](const char* job, const std::function<void()>& work) {
      const int64_t growth = testing::peakGrowth(work);
      if (testing::underAddressSanitizer || growth < 0) return;
      qInfo("%s: peak grew by %.1f MiB", job, growth / 1048576.0);
      // Twice the usual slack: the map of band-interleaved tiles holds a folio per band touched
      // (GDAL 3.10 on trixie: 50 MiB at this budget). The pathology this catches was 236 MiB.
      QVERIFY2(growth <= ram + 2 * testing::kPeakSlackBytes, job);
    };
    PcaOptions denoise;
    denoise.input = input;
    denoise.output = (dir + "/denoised.tif").toStdString();
    denoise.outputType = OutputType::SameAsInput;
    denoise.components = 5;
    denoise.device = parseDevice("cpu");
    denoise.ramBytes = ram;
    within("denoise", [&] { runDenoise(denoise, quiet); });
    for (const EndmemberMethod method : {EndmemberMethod::Atgp, EndmemberMethod::Nfindr}) {
      EndmemberOptions endmembers;
      endmembers.input = input;
      endmembers.output = (dir + "/em.csv").toStdString();
      endmembers.search.count = 4;
      endmembers.search.method = method;
      endmembers.device = parseDevice("cpu");
      endmembers.ramBytes = ram;
      within(method == EndmemberMethod::Atgp ? "atgp" : "nfindr",
             [&] { runEndmembers(endmembers, quiet); });
    }
    AbundanceOptions abundances;
    abundances.input = input;
    abundances.endmembers = (dir + "/em.csv").toStdString();
    abundances.output = (dir + "/abundances.tif").toStdString();
    abundances.device = parseDevice("cpu");
    abundances.ramBytes = ram;
    within("abundances", [&] { runAbundances(abundances, quiet); });
    // The same results as from the plain file.
    PcaOptions plain = denoise;
    plain.input = synth.output;
    plain.output = (dir + "/denoised_plain.tif").toStdString();
    plain.ramBytes = int64_t{512} << 20;
    runDenoise(plain, quiet);
    QVERIFY(sameValues(testing::readCube(denoise.output).values,
                       testing::readCube(plain.output).values));
    QVERIFY(testing::filesIn(dir).filter(".part").isEmpty());
  }
};

QTEST_GUILESS_MAIN(LayoutTests)
#include "test_layouts.moc"
