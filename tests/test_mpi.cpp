// hyperstream-mpi under mpirun (--oversubscribe, CPU backend) against the single-process engine:
// the same statistics and components on 1, 2 and 3 ranks, heights not divisible by the rank
// count, a rank whose rows are all nodata, Byte and ENVI outputs; a rank that fails to read its
// rows and a rank that is killed both end the job with no output left behind.

#include "DeviceOption.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "io/PendingRaster.h"
#include "pca/PcaJob.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QThread>
#include <QtTest>

#include <unistd.h>

#include <algorithm>
#include <cmath>

using namespace hyperstream;

namespace {

struct Run {
  int status = -1;
  QString output;  // stdout and stderr
};

// mpirun -np N [wrapper] hyperstream-mpi COMMAND ARGS.
Run mpirun(int ranks, const QStringList& arguments, const QString& wrapper = {},
           const QString& command = "pca", const QStringList& mpirunOptions = {}) {
  QProcess process;
  QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
  if (getuid() == 0) {  // CI containers run as root, which Open MPI refuses unless told
    environment.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
    environment.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
  }
  process.setProcessEnvironment(environment);
  process.setProcessChannelMode(QProcess::MergedChannels);
  QStringList all{"--oversubscribe", "-np", QString::number(ranks)};
  all << mpirunOptions;
  if (!wrapper.isEmpty()) all << wrapper;
  all << HYPERSTREAM_MPI_PROGRAM << command << arguments;
  process.start(HYPERSTREAM_MPIEXEC, all);
  if (!process.waitForFinished(300000)) return {};
  return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
          QString::fromLocal8Bit(process.readAll())};
}

QJsonObject readJson(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(file.readAll()).object();
}

std::vector<double> numbers(const QJsonValue& value) {
  std::vector<double> result;
  for (const auto& v : value.toArray()) result.push_back(v.toDouble());
  return result;
}

// 301 rows (divisible by neither 2 nor 3), the last 101 all nodata: under 3 ranks, rank 2 has no
// valid pixel at all. MNF's has spatial structure (its noise covariance is well conditioned).
testing::Cube testCube(bool spatial = false) {
  testing::Cube cube = spatial ? testing::smoothScene(301, 83, 17, 41)
                               : testing::correlatedCube(301, 83, 17, 41, 3000.0, 300.0);
  testing::roundValues(cube);
  cube.nodata.assign(17, -9999);
  for (int64_t row = 200; row < 301; ++row)
    for (int64_t col = 0; col < cube.cols; ++col)
      for (int b = 0; b < 17; ++b) cube.at(row, col, b) = -9999;
  for (int b = 0; b < 17; ++b) cube.at(10, 10, b) = -9999;  // and a hole
  return cube;
}

}  // namespace

class MpiTests : public QObject {
  Q_OBJECT

 private slots:
  // MNF: each rank reads the row above its own, so the noise pairs across ranks count.
  void mnfMatchesOneProcess_data() {
    QTest::addColumn<int>("ranks");
    QTest::newRow("1 rank") << 1;
    QTest::newRow("2 ranks") << 2;
    QTest::newRow("3 ranks, one with only nodata rows") << 3;
  }
  void mnfMatchesOneProcess() {
    QFETCH(int, ranks);
    const QString dir = testing::tempDir();
    testing::writeCube(testCube(true), (dir + "/in.tif").toStdString(), GDT_Int16);
    PcaOptions options;
    options.input = (dir + "/in.tif").toStdString();
    options.output = (dir + "/one.tif").toStdString();
    options.statsJson = (dir + "/one.json").toStdString();
    options.device = parseDevice("cpu");
    options.noise = NoiseDirection::LowerRight;
    options.components = 5;
    TestFeedback feedback;
    runPca(options, feedback);
    const Run run = mpirun(ranks,
                           {dir + "/in.tif", dir + "/mpi.tif", "--stats", dir + "/mpi.json",
                            "--components", "5", "--device", "cpu", "--quiet"},
                           {}, "mnf");
    QVERIFY2(run.status == 0, qPrintable(run.output));
    const QJsonObject one = readJson(dir + "/one.json"), mpi = readJson(dir + "/mpi.json");
    QCOMPARE(mpi["transform"].toString(), QString("mnf"));
    for (const char* key : {"eigenvalues", "noise_stddev"}) {
      const std::vector<double> a = numbers(one[key]), b = numbers(mpi[key]);
      QCOMPARE(b.size(), a.size());
      double worst = 0;
      for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / a[0]);
      qInfo("%s differ by %.3g", key, worst);
      QVERIFY2(worst <= 1e-12, qPrintable(QString("%1 differ by %2").arg(key).arg(worst)));
    }
  }

  // Denoise under MPI: each rank rebuilds its rows with rank 0's fit; the single process's image.
  void denoiseMatchesOneProcess() {
    const QString dir = testing::tempDir();
    testing::writeCube(testCube(true), (dir + "/in.tif").toStdString(), GDT_Int16);
    PcaOptions options;
    options.input = (dir + "/in.tif").toStdString();
    options.output = (dir + "/one.tif").toStdString();
    options.device = parseDevice("cpu");
    options.noise = NoiseDirection::LowerRight;
    options.components = 4;
    options.outputType = OutputType::Float64;
    TestFeedback feedback;
    runDenoise(options, feedback);
    const Run run = mpirun(3,
                           {dir + "/in.tif", dir + "/mpi.tif", "--transform", "mnf", "--components",
                            "4", "--type", "float64", "--device", "cpu", "--quiet"},
                           {}, "denoise");
    QVERIFY2(run.status == 0, qPrintable(run.output));
    const testing::Cube one = testing::readCube(options.output);
    const testing::Cube mpi = testing::readCube((dir + "/mpi.tif").toStdString());
    QCOMPARE(mpi.values.size(), one.values.size());
    double worst = 0, largest = 0;
    for (size_t i = 0; i < one.values.size(); ++i) {
      QCOMPARE(mpi.values[i] == mpi.nodata[0], one.values[i] == one.nodata[0]);
      if (one.values[i] == one.nodata[0]) continue;
      largest = std::max(largest, std::abs(one.values[i]));
      worst = std::max(worst, std::abs(mpi.values[i] - one.values[i]));
    }
    qInfo("3 ranks against one process: largest difference %.3g of %.3g", worst, largest);
    QVERIFY(worst <= 1e-9 * largest);
  }

  void matchesOneProcess_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("extension");
    QTest::newRow("1 rank") << 1 << "float32"
                            << "tif";
    QTest::newRow("2 ranks") << 2 << "float32"
                             << "tif";
    QTest::newRow("3 ranks, one with only nodata rows") << 3 << "float32"
                                                        << "tif";
    QTest::newRow("3 ranks, Byte output") << 3 << "byte"
                                          << "tif";
    QTest::newRow("2 ranks, ENVI output") << 2 << "float32"
                                          << "img";
  }
  void matchesOneProcess() {
    QFETCH(int, ranks);
    QFETCH(QString, type);
    QFETCH(QString, extension);
    const QString dir = testing::tempDir();
    const testing::Cube cube = testCube();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Int16);

    PcaOptions options;
    options.input = (dir + "/in.tif").toStdString();
    options.output = (dir + "/one." + extension).toStdString();
    options.statsJson = (dir + "/one.json").toStdString();
    options.outputType = type == "byte" ? OutputType::Byte : OutputType::Float32;
    options.device = parseDevice("cpu");
    if (extension == "img") options.format = "ENVI";
    TestFeedback feedback;
    runPca(options, feedback);

    QDir(dir).mkdir("mpi");
    const QString output = dir + "/mpi/out." + extension;
    const QString format = extension == "img" ? "ENVI" : "GTiff";
    const Run run =
        mpirun(ranks, {dir + "/in.tif", output, "--stats", dir + "/mpi/out.json", "--type", type,
                       "--format", format, "--device", "cpu", "--quiet"});
    QVERIFY2(run.status == 0, qPrintable(run.output));

    // Statistics: the same to rounding (1e-12 relative; eigenvalues relative to the largest).
    const QJsonObject one = readJson(dir + "/one.json"), mpi = readJson(dir + "/mpi/out.json");
    QCOMPARE(mpi["valid_pixels"].toDouble(), one["valid_pixels"].toDouble());
    QCOMPARE(mpi["components"].toInt(), one["components"].toInt());
    double worst = 0;
    for (const char* key : {"mean", "stddev"}) {
      const std::vector<double> a = numbers(one[key]), b = numbers(mpi[key]);
      QCOMPARE(b.size(), a.size());
      for (size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(a[i]));
    }
    const std::vector<double> a = numbers(one["eigenvalues"]), b = numbers(mpi["eigenvalues"]);
    QCOMPARE(b.size(), a.size());
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / a[0]);
    QVERIFY2(worst <= 1e-12, qPrintable(QString("statistics differ by %1").arg(worst)));
    // The chosen components: the same directions.
    const int components = one["components"].toInt();
    double worstVector = 0;
    for (int k = 0; k < components; ++k) {
      const std::vector<double> u = numbers(one["eigenvectors"].toArray()[k]);
      const std::vector<double> v = numbers(mpi["eigenvectors"].toArray()[k]);
      double dot = 0;
      for (size_t i = 0; i < u.size(); ++i) dot += u[i] * v[i];
      worstVector = std::max(worstVector, 1 - std::abs(dot));
    }
    QVERIFY2(worstVector <= 1e-9,
             qPrintable(QString("components differ: 1-|r| = %1").arg(worstVector)));
    qInfo("%d rank(s) against one process: statistics within %.1e, components 1-|r| <= %.1e", ranks,
          worst, worstVector);

    // The output: one ordinary raster, every rank's rows in it, like the single process's.
    const testing::Cube expected = testing::readCube(options.output);
    const testing::Cube got = testing::readCube(output.toStdString());
    QCOMPARE(got.rows, expected.rows);
    QCOMPARE(got.cols, expected.cols);
    QCOMPARE(got.bands, expected.bands);
    for (int k = 0; k < got.bands; ++k) {
      const std::vector<double> e = testing::bandValues(expected, k);
      const std::vector<double> g = testing::bandValues(got, k);
      double spread = 0, mean = 0;
      int64_t valid = 0;
      for (double x : e)
        if (x != expected.nodata[k] && std::isfinite(x)) mean += x, ++valid;
      mean /= valid;
      for (double x : e)
        if (x != expected.nodata[k] && std::isfinite(x)) spread += (x - mean) * (x - mean);
      spread = std::sqrt(spread / valid);
      // Byte: one model's value may round the other way; float: 1e-4 of the component's spread.
      const double tolerance = type == "byte" ? 1.0 : 1e-4 * spread;
      for (size_t p = 0; p < e.size(); ++p) {
        if (std::isnan(e[p])) {
          QVERIFY(std::isnan(g[p]));
          continue;
        }
        if (std::abs(g[p] - e[p]) > tolerance)
          QFAIL(qPrintable(QString("component %1, pixel %2: %3 against %4")
                               .arg(k + 1)
                               .arg(p)
                               .arg(g[p])
                               .arg(e[p])));
      }
    }
    // Nothing else in the folder (no temporary file left).
    QStringList expectedFiles{"out.json", "out." + extension};
    if (extension == "img") expectedFiles << "out.hdr";
    QStringList files = testing::filesIn(dir + "/mpi");
    files.removeAll("out.img.aux.xml");  // GDAL's sidecar for ENVI statistics, if any
    files.sort();
    expectedFiles.sort();
    QCOMPARE(files, expectedFiles);
  }

  // Rank 2 of 3 cannot read its rows (a VRT whose lower part lives in a file that is gone).
  void rankThatCannotRead() {
    const QString dir = testing::tempDir();
    const testing::Cube cube = testCube();
    testing::writeVrtMissingRows(cube, 200, dir + "/in.vrt");
    QDir(dir).mkdir("out");
    QFile existing(dir + "/out/pc.tif");  // an earlier result: must survive the failed run
    QVERIFY(existing.open(QIODevice::WriteOnly));
    existing.write("earlier");
    existing.close();
    const Run run = mpirun(3, {dir + "/in.vrt", dir + "/out/pc.tif", "--stats",
                               dir + "/out/pc.json", "--device", "cpu", "--quiet"});
    QVERIFY2(run.status != 0, qPrintable(run.output));
    QVERIFY2(run.output.contains("rank 2 of 3 failed") && run.output.contains("cannot read rows"),
             qPrintable(run.output));
    QCOMPARE(run.output.count("failed:"), 1);  // reported once, by rank 0
    QCOMPARE(testing::filesIn(dir + "/out"), QStringList{"pc.tif"});
    QVERIFY(existing.open(QIODevice::ReadOnly));
    QCOMPARE(existing.readAll(), QByteArray("earlier"));
  }

  // Rank 1 is killed (SIGKILL) once rank 0 has created the output: mpirun ends the job, and rank
  // 0 removes the unfinished output.
  void killedRank() {
    const QString dir = testing::tempDir();
    const testing::Cube cube = testing::correlatedCube(900, 400, 40, 3, 3000.0, 300.0);
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    // Rank 1 is killed once the output holds data (over 1 MiB), in the projection pass: every
    // rank's one-pixel probe of the output (OutputCheck) is over by then. Killed during its own
    // probe, rank 1 could not remove it (SIGKILL): that is left to the next run's clean-up.
    const QString wrapper = dir + "/kill-rank-1.sh";
    QFile script(wrapper);
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write(
        QString("#!/bin/sh\n"
                "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then\n"
                "  (while [ -z \"$(find '%1' -name pc.tif -size +1M)\" ]; do sleep 0.01; done;\n"
                "   kill -KILL $$) &\n"
                "fi\n"
                "exec \"$@\"\n")
            .arg(dir + "/out")
            .toUtf8());
    script.close();
    script.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    QDir(dir).mkdir("out");
    // mpirun sends SIGTERM, then SIGKILL after odls_base_sigkill_timeout (1 s): on a loaded machine
    // a rank could wait longer than that for the CPU. The test asks whether SIGTERM cleans up.
    const Run run = mpirun(
        3, {dir + "/in.tif", dir + "/out/pc.tif", "--components", "all", "--device", "cpu", "-q"},
        wrapper, "pca", {"--mca", "odls_base_sigkill_timeout", "3"});
    QVERIFY2(run.status != 0, qPrintable(run.output));
    QVERIFY2(run.output.contains("rank 1"), qPrintable(run.output));
    // Open MPI 5's launcher can return while rank 0 still removes the output on SIGTERM.
    QStringList left = testing::filesIn(dir + "/out");
    for (int wait = 0; wait < 100 && !left.isEmpty(); ++wait) {
      QThread::msleep(100);
      left = testing::filesIn(dir + "/out");
    }
    // Open MPI 5's launcher sends SIGKILL shortly after SIGTERM, with no setting for how long
    // (open-mpi/ompi#12149; the --mca above is Open MPI 4's): a rank still busy then leaves its
    // hidden pending folder, never the output, and the next run there removes the folder.
    for (const QString& name : left)
      QVERIFY2(PendingRaster::isPendingFolderName(name.toStdString(), nullptr, nullptr),
               qPrintable("left behind: " + left.join(", ") + "\n" + run.output));
    if (left.isEmpty()) return;
    qInfo("killed ranks left %s: a next run in the folder removes it", qPrintable(left.join(", ")));
    const Run again = mpirun(
        2, {dir + "/in.tif", dir + "/out/pc.tif", "--components", "3", "--device", "cpu", "-q"});
    QVERIFY2(again.status == 0, qPrintable(again.output));
    for (const QString& name : testing::filesIn(dir + "/out"))
      QVERIFY2(!PendingRaster::isPendingFolderName(name.toStdString(), nullptr, nullptr),
               qPrintable(name));
  }

  void clearErrors() {
    const QString dir = testing::tempDir();
    testing::writeCube(testCube(), (dir + "/in.tif").toStdString(), GDT_Int16);
    QDir(dir).mkdir("out");
    // A compressed output cannot take disjoint writes from several processes.
    Run run = mpirun(2, {dir + "/in.tif", dir + "/out/pc.tif", "--co", "COMPRESS=DEFLATE", "-q"});
    QCOMPARE(run.status, 1);
    QVERIFY2(run.output.contains("[CREATION_OPTIONS]") && run.output.count("COMPRESS=") == 1,
             qPrintable(run.output));
    // The same mistake on every rank is reported once, as hyperstream reports it.
    run = mpirun(3, {dir + "/in.tif", dir + "/out/pc.tif", "--components", "99", "-q"});
    QCOMPARE(run.status, 1);
    QVERIFY2(run.output.count("[COMPONENTS]") == 1 && !run.output.contains("rank "),
             qPrintable(run.output));
    run = mpirun(2, {dir + "/in.tif", dir + "/out/pc.tif", "--matrix", "nonsense"});
    QCOMPARE(run.status, 1);
    QCOMPARE(run.output.count("error [MATRIX]: --matrix"), 1);
    run = mpirun(2, {dir + "/in.tif", dir + "/out/pc.tif", "--gpus", "0,1"});
    QCOMPARE(run.status, 1);
    QVERIFY2(run.output.contains("[DEVICE]") && run.output.contains("each rank takes one GPU"),
             qPrintable(run.output));
    run = mpirun(2, {dir + "/in.tif", dir + "/out/pc.tif", "--frobnicate"});
    QCOMPARE(run.status, 2);
    QCOMPARE(run.output.count("error [USAGE]: "), 1);
    // More ranks than rows.
    testing::Cube tiny = testing::correlatedCube(2, 50, 5, 9);
    testing::writeCube(tiny, (dir + "/tiny.tif").toStdString(), GDT_Float32);
    run = mpirun(3, {dir + "/tiny.tif", dir + "/out/pc.tif", "-q"});
    QCOMPARE(run.status, 1);
    QVERIFY2(run.output.contains("at most one per row"), qPrintable(run.output));
    QCOMPARE(testing::filesIn(dir + "/out"), QStringList());
  }
};

QTEST_GUILESS_MAIN(MpiTests)
#include "test_mpi.moc"
