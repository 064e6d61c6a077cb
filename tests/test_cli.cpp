// Integration tests of the hyperstream command line: exit codes, messages, synth, Ctrl-C.

#include "TestSupport.h"
#include "io/SvgPlot.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QtTest>

#include <cmath>
#include <csignal>

namespace {

struct Run {
  int exitCode;
  QString out, err;
};

Run run(const QStringList& arguments, int timeoutMs = 120000,
        const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment()) {
  QProcess process;
  process.setProcessEnvironment(environment);
  process.start(QStringLiteral(HYPERSTREAM_CLI), arguments);
  process.waitForFinished(timeoutMs);
  return {process.exitCode(), process.readAllStandardOutput(), process.readAllStandardError()};
}

// Expects exit status `status` and one line "hyperstream: error [parameter]: ...".
void expectError(const QStringList& arguments, const QString& parameter, int status = 1) {
  const Run result = run(arguments);
  QVERIFY2(
      result.exitCode == status && result.err.trimmed().count('\n') == 0 &&
          result.err.startsWith("hyperstream: error [" + parameter + "]: "),
      qPrintable(arguments.join(' ') + QString(" -> exit %1: ").arg(result.exitCode) + result.err));
}

// `hyperstream synth` writes a demo scene of that size at `path`; its exit status.
int synthScene(const QString& path, int rows, int cols, int bands) {
  return run({"synth", path, "--rows", QString::number(rows), "--cols", QString::number(cols),
              "--bands", QString::number(bands), "--quiet"})
      .exitCode;
}

}  // namespace

class CliTests : public QObject {
  Q_OBJECT
 private slots:
  void help() {
    const Run general = run({"--help"});
    QCOMPARE(general.exitCode, 0);
    QVERIFY(general.out.contains("pca INPUT OUTPUT"));
    QVERIFY(general.out.contains("mnf INPUT OUTPUT"));
    QVERIFY(general.out.contains("apply STATS INPUT OUTPUT"));
    QVERIFY(general.out.contains("endmembers INPUT OUTPUT.csv"));
    QVERIFY(general.out.contains("abundances INPUT ENDMEMBERS.csv OUTPUT"));
    const Run pca = run({"pca", "--help"});
    QCOMPARE(pca.exitCode, 0);
    for (const char* option : {"--components", "--variance", "--matrix", "--type", "--bands",
                               "--stats", "--table", "--ram", "--device", "--quiet"})
      QVERIFY2(pca.out.contains(option), option);
  }

  void synthThenPca() {
    const QString dir = testing::tempDir();
    const Run synth = run({"synth", dir + "/scene.tif", "--rows", "70", "--cols", "90", "--bands",
                           "60", "--truth", "--quiet"});
    QCOMPARE(synth.exitCode, 0);
    const testing::Cube scene = testing::readCube((dir + "/scene.tif").toStdString());
    QCOMPARE(scene.bands, 60);
    QCOMPARE(scene.nodata[0], -9999.0);
    QCOMPARE(scene.at(0, 0, 0), -9999.0);  // nodata border
    QCOMPARE(scene.at(69, 45, 10), -9999.0);
    QVERIFY(scene.at(35, 45, 10) > 0);
    const testing::Reference ref = testing::referencePca(scene);
    QCOMPARE(ref.constant.size(), size_t{1});  // one dead band per ~56
    const testing::Cube abundances =
        testing::readCube((dir + "/scene_abundances.tif").toStdString());
    QCOMPARE(abundances.bands, 5);
    for (int64_t p = 0; p < abundances.pixels(); p += 97) {
      double sum = 0;
      for (int e = 0; e < 5; ++e) sum += abundances.values[p * 5 + e];
      QVERIFY(std::abs(sum - 1) < 1e-5);  // abundances sum to one
    }
    QVERIFY(QFile::exists(dir + "/scene_endmembers.csv"));

    const Run pca =
        run({"pca", dir + "/scene.tif", dir + "/pcs.tif", "--components", "3", "--stats",
             dir + "/s.json", "--table", dir + "/t.csv", "--html", dir + "/r.html"});
    QCOMPARE(pca.exitCode, 0);
    QVERIFY(pca.out.contains("3 component(s)"));
    QVERIFY(pca.err.contains("constant band"));
    QCOMPARE(testing::readCube((dir + "/pcs.tif").toStdString()).bands, 3);
    QVERIFY(QFile::exists(dir + "/s.json") && QFile::exists(dir + "/t.csv"));
    QFile html(dir + "/r.html");
    QVERIFY(html.open(QIODevice::ReadOnly));
    const QString report = html.readAll();
    QCOMPARE(report.count("<svg"), 2);            // scree plot and loadings
    QVERIFY(report.contains("wavelength (nm)"));  // the scene carries wavelengths
    QVERIFY(report.contains("<td>PC3</td>"));
    QVERIFY(report.contains("log scale") && report.contains("3 written"));  // log scree, cut-off
    // Zoomed to where the signal is: the scree plot's first 30 of the 59 components, the table
    // the 3 written and 5 more; HySime's estimate beside them.
    QVERIFY(report.contains("the first 30 of 59"));
    QVERIFY(report.contains("<td>PC8</td>") && !report.contains("<td>PC9</td>"));
    QVERIFY(report.contains("51 more components"));
    QVERIFY(report.contains("Signal subspace"));
    QCOMPARE(report.count("<img src='data:image/png;base64,"), 1);  // PC1-3 quick look
    QVERIFY(!report.contains("http://") || report.count("http://") == report.count("xmlns="));
    QVERIFY(!report.contains("<script"));

    // The scene carries wavelengths (400-2500 nm): the water-vapour windows can be left out.
    const Run windows = run({"pca", dir + "/scene.tif", dir + "/w.tif", "--exclude-nm",
                             "1340-1450,1790-1960", "--components", "2"});
    QVERIFY2(windows.exitCode == 0, qPrintable(windows.err));
    QVERIFY2(windows.err.contains("53 of 60 bands"), qPrintable(windows.err));
    const Run badRange = run({"pca", dir + "/scene.tif", dir + "/w.tif", "--exclude-nm", "1340"});
    QCOMPARE(badRange.exitCode, 1);
    QVERIFY(badRange.err.contains("error [EXCLUDE_NM]: --exclude-nm"));

    const Run quiet = run({"pca", dir + "/scene.tif", dir + "/pcs2.tif", "--quiet"});
    QCOMPARE(quiet.exitCode, 0);
    QVERIFY(quiet.out.isEmpty());
  }

  void sppFromTheCommandLine() {
    const QString dir = testing::tempDir();
    QCOMPARE(synthScene(dir + "/s.tif", 40, 30, 20), 0);
    const Run help = run({"spp", "--help"});
    QCOMPARE(help.exitCode, 0);
    for (const char* option :
         {"--window", "--border", "--noise-adjusted", "--type", "--alpha", "--rho", "--device"})
      QVERIFY2(help.out.contains(option), option);
    const Run spp = run({"spp", dir + "/s.tif", dir + "/spp.tif", "--window", "7", "--border",
                         "mirror", "--alpha", dir + "/alpha.tif", "-q"});
    QCOMPARE(spp.exitCode, 0);
    QCOMPARE(testing::readCube((dir + "/spp.tif").toStdString()).bands, 20);
    QCOMPARE(testing::readCube((dir + "/alpha.tif").toStdString()).bands, 1);
    // Noise-adjusted: the summary names the noise it discounted.
    const Run adjusted = run({"spp", dir + "/s.tif", dir + "/spp2.tif", "--noise-adjusted"});
    QCOMPARE(adjusted.exitCode, 0);
    QVERIFY2(adjusted.out.contains(QRegularExpression("noise: [0-9.e+]+ per band")),
             qPrintable(adjusted.out));
    const Run bad = run({"spp", dir + "/s.tif", dir + "/bad.tif", "--window", "4"});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY(bad.err.startsWith("hyperstream: error [WINDOW]: "));
    QCOMPARE(run({"spp", dir + "/s.tif", dir + "/bad.tif", "--border", "wrap"}).exitCode, 1);
  }

  // The endmember report's spectra break at a dead band (the same value in every endmember)
  // instead of dropping to it.
  void endmemberSpectraBreakAtDeadBands() {
    const QString dir = testing::tempDir();
    QCOMPARE(
        run({"synth", dir + "/s.tif", "--rows", "40", "--cols", "40", "--bands", "60", "--quiet"})
            .exitCode,
        0);  // one dead band per ~56
    QCOMPARE(run({"endmembers", dir + "/s.tif", dir + "/em.csv", "--count", "3", "--html",
                  dir + "/em.html", "-q"})
                 .exitCode,
             0);
    QFile report(dir + "/em.html");
    QVERIFY(report.open(QIODevice::ReadOnly));
    const QString page = QString::fromUtf8(report.readAll());
    const QRegularExpression broken("<path d='M[^']* M[^']*'");
    QCOMPARE(page.count(broken), 3);  // each endmember's line in two pieces
  }

  // The unmixing chain from the command line: SPP, endmembers searched in its output (table and
  // points), abundances; usage mistakes exit with 2, job errors with 1 naming the parameter.
  void unmixingFromTheCommandLine() {
    const QString dir = testing::tempDir();
    QCOMPARE(run({"synth", dir + "/s.tif", "--rows", "50", "--cols", "50", "--bands", "24",
                  "--endmembers", "4", "--pure-patches", "4", "--snr", "35", "--quiet"})
                 .exitCode,
             0);
    const Run help = run({"endmembers", "--help"});
    QCOMPARE(help.exitCode, 0);
    for (const char* option : {"--count", "--method", "--locations-from", "--points", "--seed",
                               "--average-window", "--vca-projection", "--device", "--ram"})
      QVERIFY2(help.out.contains(option), option);
    QCOMPARE(run({"spp", dir + "/s.tif", dir + "/spp.tif", "-q"}).exitCode, 0);
    const Run endmembers = run({"endmembers", dir + "/s.tif", dir + "/em.csv", "--count", "4",
                                "--method", "nfindr", "--locations-from", dir + "/spp.tif",
                                "--points", dir + "/em.gpkg", "--average-window", "3"});
    QCOMPARE(endmembers.exitCode, 0);
    QVERIFY2(endmembers.out.contains("endmember_4: row"), qPrintable(endmembers.out));
    QVERIFY(QFileInfo::exists(dir + "/em.gpkg"));
    const Run abundances = run({"abundances", dir + "/s.tif", dir + "/em.csv", dir + "/ab.tif",
                                "--rmse", dir + "/rmse.tif", "--html", dir + "/ab.html", "-q"});
    QCOMPARE(abundances.exitCode, 0);
    QCOMPARE(testing::readCube((dir + "/ab.tif").toStdString()).bands, 4);
    QFile report(dir + "/ab.html");
    QVERIFY(report.open(QIODevice::ReadOnly));
    const QString page = QString::fromUtf8(report.readAll());
    QCOMPARE(page.count("<img src='data:image/png;base64,"), 4 + 1);  // a map each, and RMSE
    QVERIFY(page.contains("FCLS") && page.contains("endmember_4") && page.contains("<svg"));
    // A colour bar for the maps; the RMSE's mean and largest value, as the raster holds them.
    QVERIFY(page.contains("linearGradient"));
    const testing::Cube rmse = testing::readCube((dir + "/rmse.tif").toStdString());
    double sum = 0, largest = 0;
    int64_t valid = 0;
    for (double v : rmse.values)
      if (std::isfinite(v) && v != rmse.nodata[0]) {
        sum += v;
        largest = std::max(largest, v);
        ++valid;
      }
    QVERIFY2(page.contains(QString("mean %1, largest %2")
                               .arg(hyperstream::svg::number(sum / valid, 4),
                                    hyperstream::svg::number(largest, 4))),
             qPrintable(page.mid(page.indexOf("Reconstruction error"), 200)));
    // Without --count: as many as the scene has materials (4 in the generated scene).
    const Run counted = run({"endmembers", dir + "/s.tif", dir + "/x.csv"});
    QVERIFY2(counted.exitCode == 0 && counted.err.contains("Materials: 4"),
             qPrintable(counted.err));
    QCOMPARE(
        run({"abundances", dir + "/s.tif", dir + "/em.csv", dir + "/x.tif", "--method", "lasso"})
            .exitCode,
        1);
    // Fewer bands selected: the table's columns of those bands, as detection and SAM take them.
    const Run bands = run({"abundances", dir + "/s.tif", dir + "/em.csv", dir + "/ten.tif",
                           "--bands", "1-10", "--quiet"});
    QVERIFY2(bands.exitCode == 0, qPrintable(bands.err));
    // A table of ten bands for all 24: refused, naming the bands it lacks.
    QCOMPARE(run({"endmembers", dir + "/s.tif", dir + "/em10.csv", "--count", "4", "--bands",
                  "1-10", "--quiet"})
                 .exitCode,
             0);
    const Run lacking = run({"abundances", dir + "/s.tif", dir + "/em10.csv", dir + "/x.tif"});
    QCOMPARE(lacking.exitCode, 1);
    QVERIFY2(lacking.err.startsWith("hyperstream: error [ENDMEMBERS]: the table's 10 columns give "
                                    "10 of the 24 selected bands (none for band 11"),
             qPrintable(lacking.err));
    QVERIFY(!QFileInfo::exists(dir + "/x.tif"));
  }

  // rx and detect: help, a run whose summary names the scores, the targets picked by the
  // endmembers' band names when fewer bands are selected, and errors naming the parameter.
  void detectionFromTheCommandLine() {
    const QString dir = testing::tempDir();
    QCOMPARE(run({"synth", dir + "/s.tif", "--rows", "40", "--cols", "50", "--bands", "24",
                  "--endmembers", "3", "--quiet"})
                 .exitCode,
             0);
    for (const char* command : {"rx", "detect"}) {
      const Run help = run({command, "--help"});
      QCOMPARE(help.exitCode, 0);
      for (const char* option : {"--components", "--shrinkage", "--type", "--gpus", "--device"})
        QVERIFY2(help.out.contains(option), option);
    }
    const Run rx = run({"rx", dir + "/s.tif", dir + "/rx.tif"});
    QCOMPARE(rx.exitCode, 0);
    QVERIFY2(rx.out.contains("RX (Mahalanobis distance)"), qPrintable(rx.out));
    QCOMPARE(run({"endmembers", dir + "/s.tif", dir + "/em.csv", "--count", "3", "-q"}).exitCode,
             0);
    const Run ace = run({"detect", dir + "/s.tif", dir + "/em.csv", dir + "/ace.tif", "--method",
                         "ace", "--bands", "2-20"});
    QCOMPARE(ace.exitCode, 0);
    QVERIFY2(ace.out.contains("ACE: endmember_3"), qPrintable(ace.out));
    expectError({"detect", dir + "/s.tif", dir + "/em.csv", dir + "/x.tif"}, "METHOD");
    expectError({"detect", dir + "/s.tif", dir + "/em.csv", dir + "/x.tif", "--method", "rx"},
                "METHOD");
    expectError({"detect", dir + "/s.tif", dir + "/none.csv", dir + "/x.tif", "--method", "mf"},
                "TARGETS");
    expectError({"rx", dir + "/s.tif", dir + "/x.tif", "--type", "byte"}, "OUTPUT_TYPE");
    expectError({"rx", dir + "/s.tif", dir + "/x.tif", "--shrinkage", "-1"}, "SHRINKAGE");
    QVERIFY(!QFileInfo::exists(dir + "/x.tif"));
    // Each column's statistics; an absorption target; --components does not apply per column.
    const Run columns = run({"detect", dir + "/s.tif", dir + "/em.csv", dir + "/mfc.tif",
                             "--method", "mf", "--per-column", "--target-mode", "absorption"});
    QCOMPARE(columns.exitCode, 0);
    QVERIFY2(columns.out.contains("mf with each column's statistics"), qPrintable(columns.out));
    expectError({"rx", dir + "/s.tif", dir + "/x.tif", "--per-column", "--components", "3"},
                "COMPONENTS");
    expectError({"detect", dir + "/s.tif", dir + "/em.csv", dir + "/x.tif", "--method", "mf",
                 "--target-mode", "plume"},
                "TARGET_MODE");
    // The spectral angle mapper against the endmembers' table: its classes named, their counts.
    const Run samHelp = run({"sam", "--help"});
    QCOMPARE(samHelp.exitCode, 0);
    for (const char* option : {"--max-angle", "--library-wavelengths", "--angles", "--counts"})
      QVERIFY2(samHelp.out.contains(option), option);
    const Run sam =
        run({"sam", dir + "/s.tif", dir + "/em.csv", dir + "/classes.tif", "--angle",
             dir + "/angle.tif", "--counts", dir + "/counts.csv", "--max-angle", "0.05"});
    QCOMPARE(sam.exitCode, 0);
    QVERIFY2(sam.out.contains("class 3 endmember_3: "), qPrintable(sam.out));
    QVERIFY(QFileInfo::exists(dir + "/angle.tif") && QFileInfo::exists(dir + "/counts.csv"));
    expectError({"sam", dir + "/s.tif", dir + "/em.csv", dir + "/x.tif", "--max-angle", "0"},
                "MAX_ANGLE");
    expectError({"sam", dir + "/s.tif", dir + "/none.sli", dir + "/x.tif"}, "LIBRARY");
    QVERIFY(!QFileInfo::exists(dir + "/x.tif"));
  }

  // Without the CUDA library (a CPU-only build or machine): auto runs on the CPU, gpu is an error.
  void withoutTheGpuBackend() {
    const QString dir = testing::tempDir();
    QCOMPARE(synthScene(dir + "/s.tif", 30, 20, 12), 0);
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("HYPERSTREAM_CUDA_LIBRARY", dir + "/no-such-libhyperstream_cuda.so");
    const Run gpu =
        run({"pca", dir + "/s.tif", dir + "/gpu.tif", "--device", "gpu"}, 60000, environment);
    QCOMPARE(gpu.exitCode, 1);
    QVERIFY2(gpu.err.startsWith("hyperstream: error [DEVICE]: GPU requested, but no usable GPU"),
             qPrintable(gpu.err));
    QVERIFY(!QFileInfo::exists(dir + "/gpu.tif"));
    const Run automatic = run({"pca", dir + "/s.tif", dir + "/auto.tif"}, 60000, environment);
    QCOMPARE(automatic.exitCode, 0);
    // A small job goes to the CPU without looking for a GPU, and says why.
    QVERIFY2(automatic.err.contains("Device auto: the CPU, for 14 KiB of work"),
             qPrintable(automatic.err));
    QVERIFY2(automatic.out.contains(" on cpu "), qPrintable(automatic.out));
    const Run devices = run({"devices"}, 60000, environment);
    QCOMPARE(devices.exitCode, 1);
    QVERIFY(devices.out.startsWith("no GPU backend"));
  }

  // Started through PATH (argv[0] is then a bare name), the CLI finds the CUDA library beside it
  // as when started by its full path (an installed /usr/bin/hyperstream once did not).
  void findsItsGpuBackendThroughPath() {
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.remove("HYPERSTREAM_CUDA_LIBRARY");
    const Run byPath = run({"devices"}, 60000, environment);
    environment.insert("PATH",
                       QFileInfo(HYPERSTREAM_CLI).absolutePath() + ":" + environment.value("PATH"));
    QProcess process;
    process.setProcessEnvironment(environment);
    process.setWorkingDirectory(testing::tempDir());
    process.start(QStringLiteral("sh"), {"-c", "hyperstream devices"});
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(QString(process.readAllStandardOutput()), byPath.out);
  }

  // mnf and apply from the command line: the statistics an mnf run writes, applied again, give
  // its file; their mistakes are usage errors (2) or errors naming the parameter (1).
  void mnfThenApply() {
    const QString dir = testing::tempDir();
    QCOMPARE(synthScene(dir + "/scene.tif", 40, 50, 20), 0);
    const Run mnfHelp = run({"mnf", "--help"});
    QCOMPARE(mnfHelp.exitCode, 0);
    for (const char* option : {"--noise", "--snr", "--components", "--variance", "--stats"})
      QVERIFY2(mnfHelp.out.contains(option), option);
    QVERIFY(!mnfHelp.out.contains("--matrix"));
    const Run mnf = run({"mnf", dir + "/scene.tif", dir + "/mnf.tif", "--snr", "2", "--noise",
                         "lower", "--stats", dir + "/mnf.json"});
    QVERIFY2(mnf.exitCode == 0, qPrintable(mnf.err));
    QVERIFY(mnf.out.contains("of the summed SNR"));
    const Run apply = run({"apply", dir + "/mnf.json", dir + "/scene.tif", dir + "/applied.tif"});
    QVERIFY2(apply.exitCode == 0, qPrintable(apply.err));
    QFile a(dir + "/mnf.tif"), b(dir + "/applied.tif");
    QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
    QVERIFY(a.readAll() == b.readAll());

    expectError({"mnf", "a.tif", "b.tif", "--snr", "2", "--components", "3"}, "MIN_SNR");
    QCOMPARE(run({"mnf", "a.tif", "b.tif", "--matrix", "correlation"}).exitCode, 2);  // no option
    expectError({"apply", dir + "/mnf.json", dir + "/scene.tif"}, "USAGE", 2);
    const Run direction = run({"mnf", dir + "/scene.tif", dir + "/x.tif", "--noise", "upward"});
    QCOMPARE(direction.exitCode, 1);
    QVERIFY2(direction.err.contains("[NOISE_DIRECTION]"), qPrintable(direction.err));
    const Run notStats = run({"apply", dir + "/scene.tif", dir + "/scene.tif", dir + "/y.tif"});
    QCOMPARE(notStats.exitCode, 1);
    QVERIFY2(notStats.err.contains("[STATS]"), qPrintable(notStats.err));
    QVERIFY(!QFile::exists(dir + "/x.tif") && !QFile::exists(dir + "/y.tif"));
  }

  // denoise in one job equals pca then inverse of the same components; the other transform's
  // options and component types are refused.
  void denoiseAndInverse() {
    const QString dir = testing::tempDir();
    QCOMPARE(synthScene(dir + "/scene.tif", 30, 40, 16), 0);
    const Run help = run({"denoise", "--help"});
    for (const char* option : {"--transform", "--noise", "--matrix", "--snr", "--components"})
      QVERIFY2(help.out.contains(option), option);
    const Run denoise =
        run({"denoise", dir + "/scene.tif", dir + "/denoised.tif", "--components", "5"});
    QVERIFY2(denoise.exitCode == 0, qPrintable(denoise.err));
    QVERIFY2(denoise.out.contains("5 PCA component(s)") && denoise.out.contains("Int16"),
             qPrintable(denoise.out));
    QCOMPARE(run({"pca", dir + "/scene.tif", dir + "/pcs.tif", "--components", "5", "--type",
                  "float64", "--stats", dir + "/pcs.json", "--quiet"})
                 .exitCode,
             0);
    const Run inverse = run({"inverse", dir + "/pcs.tif", dir + "/pcs.json", dir + "/inverse.tif"});
    QVERIFY2(inverse.exitCode == 0, qPrintable(inverse.err));
    const testing::Cube once = testing::readCube((dir + "/denoised.tif").toStdString());
    const testing::Cube twice = testing::readCube((dir + "/inverse.tif").toStdString());
    QCOMPARE(once.bands, 16);
    for (size_t i = 0; i < once.values.size(); ++i)  // rounding ties may go either way
      QVERIFY(std::abs(once.values[i] - twice.values[i]) <= 1);

    expectError({"denoise", "a.tif", "b.tif", "--noise", "lower"}, "NOISE_DIRECTION");
    expectError({"denoise", "a.tif", "b.tif", "--transform", "mnf", "--matrix", "correlation"},
                "MATRIX");
    expectError({"denoise", "a.tif", "b.tif", "--transform", "ica"}, "TRANSFORM");
    expectError({"denoise", "a.tif", "b.tif", "--type", "byte"}, "OUTPUT_TYPE");
    expectError({"pca", "a.tif", "b.tif", "--type", "input"}, "OUTPUT_TYPE");
    expectError({"inverse", dir + "/pcs.tif", dir + "/pcs.json"}, "USAGE", 2);
    const Run noStats = run({"inverse", dir + "/pcs.tif", dir + "/scene.tif", dir + "/z.tif"});
    QCOMPARE(noStats.exitCode, 1);
    QVERIFY2(noStats.err.contains("[STATS]"), qPrintable(noStats.err));
    QVERIFY(!QFile::exists(dir + "/z.tif"));
  }

  void errorsAreOneLine() {
    const QString dir = testing::tempDir();
    const Run missing = run({"pca", dir + "/none.tif", dir + "/out.tif"});
    QCOMPARE(missing.exitCode, 1);
    QCOMPARE(missing.err.trimmed().count('\n'), 0);
    QVERIFY(missing.err.startsWith("hyperstream: error [INPUT]: "));
    // Every parameter error in one form, naming the parameter as QGIS does, exit status 1; a
    // command line that cannot be parsed names USAGE, exit status 2.
    expectError({"pca", "only-one-file.tif"}, "USAGE", 2);
    expectError({"pca", "a.tif", "b.tif", "--frobnicate"}, "USAGE", 2);
    expectError({"frobnicate"}, "USAGE", 2);
    expectError({"pca", "a.tif", "b.tif", "--type", "int8"}, "OUTPUT_TYPE");
    expectError({"pca", "a.tif", "b.tif", "--components", "3", "--variance", "90"}, "COMPONENTS");
    expectError({"pca", "a.tif", "b.tif", "--bands", "0"}, "BANDS");
    expectError({"pca", "a.tif", "b.tif", "--ram", "0"}, "RAM_MB");
    expectError({"pca", "a.tif", "b.tif", "--matrix", "foo"}, "MATRIX");
    expectError({"pca", "a.tif", "b.tif", "--device", "tpu"}, "DEVICE");
    expectError({"mnf", "a.tif", "b.tif", "--noise", "up"}, "NOISE_DIRECTION");
    expectError({"spp", "a.tif", "b.tif", "--border", "wrap"}, "BORDER");
    expectError({"endmembers", "a.tif", "b.csv", "--count", "many"}, "COUNT");
    QCOMPARE(run({}).exitCode, 2);
  }

  // Option values are checked before any work and never overflow: "--bands 1-2000000000" was
  // expanded into 15.8 GB before an error, "--ram 8796093022208" overflowed into "at least 16".
  void hugeOptionValues() {
    const QString dir = testing::tempDir();
    QCOMPARE(synthScene(dir + "/s.tif", 20, 20, 8), 0);
    QElapsedTimer timer;
    timer.start();
    for (const char* range : {"1-2000000000", "1-2147483647"}) {
      const Run bands = run({"pca", dir + "/s.tif", dir + "/o.tif", "--bands", range}, 20000);
      QCOMPARE(bands.exitCode, 1);
      QVERIFY2(bands.err.contains("[BANDS]") && bands.err.contains("does not exist"),
               qPrintable(bands.err));
    }
    QVERIFY(timer.elapsed() < 10000);
    const QList<QStringList> usageErrors = {
        {"pca", "a.tif", "b.tif", "--ram", "8796093022208"},
        {"pca", "a.tif", "b.tif", "--gpu-memory", "8796093022208"},
        {"pca", "a.tif", "b.tif", "--components", "4294967299"},
        {"pca", "a.tif", "b.tif", "--bands", "0-3"},
        {"spp", "a.tif", "b.tif", "--window", "4294967299"},
        {"synth", "s.tif", "--border", "-5"},
        {"synth", "s.tif", "--dead-bands", "-3"},
        {"synth", "s.tif", "--dead-bands", "three"},
    };
    for (const QStringList& arguments : usageErrors) {
      const Run usage = run(arguments);
      QVERIFY2(usage.exitCode == 1, qPrintable(arguments.join(' ') + ": " + usage.err));
      QVERIFY2(usage.err.contains("error [") && usage.err.contains("--"), qPrintable(usage.err));
    }
    QCOMPARE(testing::filesIn(dir), QStringList{"s.tif"});
  }

  // Running out of memory is an error naming the RAM budget (it was "error: std::bad_alloc",
  // and a hang in QGIS); under an address-space limit that leaves OpenBLAS no room (it then
  // retries forever), the job is refused before it starts.
  void outOfMemoryNamesTheRamBudget() {
    if (testing::underAddressSanitizer)
      QSKIP("AddressSanitizer reserves terabytes of address space: no address-space limit fits");
    const QString dir = testing::tempDir();
    QCOMPARE(
        run({"synth", dir + "/s.tif", "--rows", "600", "--cols", "500", "--bands", "100", "-q"})
            .exitCode,
        0);
    QProcess probe;
    probe.start("prlimit", {"--version"});
    if (!probe.waitForFinished() || probe.exitCode() != 0) QSKIP("no prlimit here");
    for (const char* limit : {"900000000", "3000000000"}) {
      QProcess process;
      process.start("prlimit", {QString("--as=") + limit, "--", QStringLiteral(HYPERSTREAM_CLI),
                                "pca", dir + "/s.tif", dir + "/o.tif", "--ram", "100000"});
      QVERIFY(process.waitForFinished(60000));
      const QString err = process.readAllStandardError();
      QCOMPARE(process.exitCode(), 1);
      QVERIFY2(err.contains("error [RAM_MB]"), qPrintable(err));
    }
    QCOMPARE(testing::filesIn(dir), QStringList{"s.tif"});
  }

  // A disk that fills up while an ENVI output is written leaves nothing: its .hdr and .aux.xml
  // were left behind. The disk is a 1 MiB tmpfs, mounted in a user and mount namespace of its own
  // (no root needed), which ends with the shell: the shell lists what is left.
  void diskFullLeavesNothing() {
    const QString dir = testing::tempDir();
    QCOMPARE(synthScene(dir + "/s.tif", 200, 100, 30), 0);
    QVERIFY(QDir(dir).mkdir("full"));
    const QString script = QString(
                               "mount -t tmpfs -o size=1m tmpfs '%1' || exit 99; \"%2\" pca "
                               "'%3' '%1/o.bin' --format ENVI --components all -q; "
                               "echo \"status $?\"; ls -A '%1'")
                               .arg(dir + "/full", QStringLiteral(HYPERSTREAM_CLI), dir + "/s.tif");
    QProcess process;
    process.start("unshare", {"--user", "--map-root-user", "--mount", "sh", "-c", script});
    QVERIFY(process.waitForFinished(60000));
    if (process.exitCode() != 0)
      QSKIP(qPrintable("no tmpfs in a namespace of our own here: " +
                       process.readAllStandardError().trimmed()));
    const QString err = process.readAllStandardError();
    const QStringList out =
        QString(process.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    QVERIFY2(err.contains("error [OUTPUT]"), qPrintable(err));
    QCOMPARE(out, QStringList{"status 1"});  // and no file after it
  }

  // A second Ctrl-C (or SIGTERM) ends the program at once, and still removes the output in
  // progress: it once left a 2 GB .part file.
  void secondInterruptStillRemovesTheOutput() {
    const QString dir = testing::tempDir();
    QCOMPARE(run({"synth", dir + "/big.tif", "--rows", "600", "--cols", "400", "--quiet"}).exitCode,
             0);
    QProcess process;
    // Compressed, pass 2 lasts seconds: a loaded machine once let the run end between the test
    // reading "valid of" and the signals.
    process.start(QStringLiteral(HYPERSTREAM_CLI),
                  {"pca", dir + "/big.tif", dir + "/out.tif", "--components", "all", "--strip-rows",
                   "4", "--co", "COMPRESS=DEFLATE", "--co", "ZLEVEL=9"});
    QVERIFY(process.waitForStarted());
    process.setReadChannel(QProcess::StandardError);
    QString messages;
    while (!messages.contains("valid of") && process.waitForReadyRead(20000))
      messages += process.readAllStandardError();  // in pass 2: the output exists
    if (process.state() != QProcess::Running) QSKIP("the run ended before the interrupts");
    // Stopped, the process gets both signals (of two kinds, so not merged into one) at once when
    // it continues: the second always arrives while the first cancel is under way.
    const auto pid = static_cast<pid_t>(process.processId());
    ::kill(pid, SIGSTOP);
    ::kill(pid, SIGINT);
    ::kill(pid, SIGTERM);
    ::kill(pid, SIGCONT);
    QVERIFY(process.waitForFinished(20000));
    messages += process.readAllStandardError();
    if (messages.contains("components: ")) QSKIP("the run ended before the interrupts arrived");
    QVERIFY2(messages.contains("canceling"), qPrintable(messages));
    QCOMPARE(process.exitStatus(), QProcess::CrashExit);  // ended by the second signal
    QCOMPARE(testing::filesIn(dir).join(' '), QString("big.tif"));
  }

  void interruptCancelsCleanly() {
    const QString dir = testing::tempDir();
    QCOMPARE(run({"synth", dir + "/big.tif", "--rows", "600", "--cols", "400", "--quiet"}).exitCode,
             0);
    QProcess process;
    process.start(QStringLiteral(HYPERSTREAM_CLI),
                  {"pca", dir + "/big.tif", dir + "/out.tif", "--strip-rows", "1", "--ram", "64"});
    QVERIFY(process.waitForStarted());
    // Interrupt once the job has planned its strips (its first message), well before its end.
    process.setReadChannel(QProcess::StandardError);
    QString messages;
    while (!messages.contains("strip(s)") && process.waitForReadyRead(10000))
      messages += process.readAllStandardError();
    if (process.state() != QProcess::Running) QSKIP("the run ended before the interrupt was sent");
    ::kill(static_cast<pid_t>(process.processId()), SIGINT);
    QVERIFY(process.waitForFinished(20000));
    QCOMPARE(process.exitCode(), 130);
    QVERIFY((messages + process.readAllStandardError()).contains("canceled"));
    QCOMPARE(testing::filesIn(dir), QStringList{"big.tif"});
  }
};

QTEST_GUILESS_MAIN(CliTests)
#include "test_cli.moc"
