// Integration tests of the hyperstream command line: exit codes, messages, synth, Ctrl-C.

#include "TestSupport.h"

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

}  // namespace

class CliTests : public QObject {
  Q_OBJECT
 private slots:
  void help() {
    const Run general = run({"--help"});
    QCOMPARE(general.exitCode, 0);
    QVERIFY(general.out.contains("pca INPUT OUTPUT"));
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
    QVERIFY(!report.contains("http://") || report.count("http://") == report.count("xmlns="));
    QVERIFY(!report.contains("<script"));

    const Run quiet = run({"pca", dir + "/scene.tif", dir + "/pcs2.tif", "--quiet"});
    QCOMPARE(quiet.exitCode, 0);
    QVERIFY(quiet.out.isEmpty());
  }

  void sppFromTheCommandLine() {
    const QString dir = testing::tempDir();
    QCOMPARE(run({"synth", dir + "/s.tif", "--rows", "40", "--cols", "30", "--bands", "20", "-q"})
                 .exitCode,
             0);
    const Run help = run({"spp", "--help"});
    QCOMPARE(help.exitCode, 0);
    for (const char* option : {"--window", "--border", "--type", "--alpha", "--rho", "--device"})
      QVERIFY2(help.out.contains(option), option);
    const Run spp = run({"spp", dir + "/s.tif", dir + "/spp.tif", "--window", "7", "--border",
                         "mirror", "--alpha", dir + "/alpha.tif", "-q"});
    QCOMPARE(spp.exitCode, 0);
    QCOMPARE(testing::readCube((dir + "/spp.tif").toStdString()).bands, 20);
    QCOMPARE(testing::readCube((dir + "/alpha.tif").toStdString()).bands, 1);
    const Run bad = run({"spp", dir + "/s.tif", dir + "/bad.tif", "--window", "4"});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY(bad.err.startsWith("hyperstream: error [WINDOW]: "));
    QCOMPARE(run({"spp", dir + "/s.tif", dir + "/bad.tif", "--border", "wrap"}).exitCode, 2);
  }

  // Without the CUDA library (a CPU-only build or machine): auto runs on the CPU, gpu is an error.
  void withoutTheGpuBackend() {
    const QString dir = testing::tempDir();
    QCOMPARE(run({"synth", dir + "/s.tif", "--rows", "30", "--cols", "20", "--bands", "12", "-q"})
                 .exitCode,
             0);
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
    QVERIFY2(automatic.err.contains("No usable GPU"), qPrintable(automatic.err));
    QVERIFY2(automatic.out.contains(" on cpu "), qPrintable(automatic.out));
    const Run devices = run({"devices"}, 60000, environment);
    QCOMPARE(devices.exitCode, 1);
    QVERIFY(devices.out.startsWith("no GPU backend"));
  }

  void errorsAreOneLine() {
    const QString dir = testing::tempDir();
    const Run missing = run({"pca", dir + "/none.tif", dir + "/out.tif"});
    QCOMPARE(missing.exitCode, 1);
    QCOMPARE(missing.err.trimmed().count('\n'), 0);
    QVERIFY(missing.err.startsWith("hyperstream: error [INPUT]: "));
    const Run usage = run({"pca", "only-one-file.tif"});
    QCOMPARE(usage.exitCode, 2);
    QCOMPARE(usage.err.trimmed().count('\n'), 0);
    QCOMPARE(run({"pca", "a.tif", "b.tif", "--type", "int8"}).exitCode, 2);
    QCOMPARE(run({"pca", "a.tif", "b.tif", "--components", "3", "--variance", "90"}).exitCode, 2);
    QCOMPARE(run({"frobnicate"}).exitCode, 2);
    QCOMPARE(run({}).exitCode, 2);
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
