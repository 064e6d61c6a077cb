// Applying a saved transform (hyperstream apply, hyperstream:applytransform): bitwise the fitting
// run's output on the image it was fitted on, the saved model's projection on another image, and
// clear errors for statistics that do not fit the image.

#include "DeviceOption.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "pca/PcaJob.h"

#include <QFile>
#include <QtTest>

#include <cmath>

using namespace hyperstream;

namespace {

PcaOptions fitOptions(const QString& dir, const QString& name) {
  PcaOptions options;
  options.input = (dir + "/in.tif").toStdString();
  options.output = (dir + "/" + name + ".tif").toStdString();
  options.statsJson = (dir + "/" + name + ".json").toStdString();
  options.device = parseDevice("cpu");
  options.components = 4;
  return options;
}

PcaOptions applyOptions(const PcaOptions& fit, const std::string& input, const QString& output) {
  PcaOptions options;
  options.savedTransform = fit.statsJson;
  options.input = input;
  options.output = output.toStdString();
  options.device = fit.device;
  options.outputType = fit.outputType;
  return options;
}

QByteArray fileBytes(const std::string& path) {
  QFile file(QString::fromStdString(path));
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

}  // namespace

class ApplyTests : public QObject {
  Q_OBJECT
 private slots:
  void reproducesTheFittingRun_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<int>("outputType");
    QTest::newRow("pca float32") << "pca" << int(OutputType::Float32);
    QTest::newRow("pca byte") << "pca" << int(OutputType::Byte);
    QTest::newRow("pca correlation float64") << "correlation" << int(OutputType::Float64);
    QTest::newRow("mnf float32") << "mnf" << int(OutputType::Float32);
  }
  void reproducesTheFittingRun() {
    QFETCH(QString, kind);
    QFETCH(int, outputType);
    testing::Cube cube = testing::smoothScene(57, 43, 9, 4);
    testing::roundValues(cube);
    cube.nodata.assign(9, 0);
    for (int64_t c = 0; c < 20; ++c) cube.at(11, c, 2) = 0;
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    PcaOptions fit = fitOptions(dir, "fit");
    fit.outputType = OutputType(outputType);
    if (kind == "correlation") fit.matrix = MatrixType::Correlation;
    if (kind == "mnf") fit.noise = NoiseDirection::LowerRight;
    TestFeedback feedback;
    runPca(fit, feedback);
    for (int64_t stripRows : {0, 5}) {
      PcaOptions apply = applyOptions(fit, fit.input, dir + "/applied.tif");
      apply.stripRows = stripRows;
      const PcaResult result = runApply(apply, feedback);
      QCOMPARE(result.components, 4);
      QVERIFY2(fileBytes(apply.output) == fileBytes(fit.output),
               qPrintable(QString("strips of %1 rows: not the fitting run's file").arg(stripRows)));
    }
  }

  // On another image, the saved model's projection: the reference of the fitting image applied.
  void anotherImage() {
    const QString dir = testing::tempDir();
    testing::Cube cube = testing::correlatedCube(40, 30, 7, 3);
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float64);
    PcaOptions fit = fitOptions(dir, "fit");
    fit.outputType = OutputType::Float64;
    TestFeedback feedback;
    runPca(fit, feedback);
    const testing::Reference reference = testing::referencePca(cube);
    testing::Cube other = testing::correlatedCube(25, 33, 7, 99);
    other.nodata.assign(7, -1.0);
    other.at(3, 3, 3) = -1.0;
    testing::writeCube(other, (dir + "/other.tif").toStdString(), GDT_Float64);
    PcaOptions apply =
        applyOptions(fit, (dir + "/other.tif").toStdString(), dir + "/other_pcs.tif");
    runApply(apply, feedback);
    const testing::Cube written = testing::readCube(apply.output);
    QCOMPARE(written.bands, 4);
    for (int k = 0; k < 4; ++k) {
      const std::vector<double> expected = testing::referenceComponent(other, reference, k);
      const std::vector<double> values = testing::bandValues(written, k);
      for (size_t p = 0; p < values.size(); ++p) {
        if (!std::isfinite(expected[p])) {
          QCOMPARE(values[p], written.nodata[k]);
          continue;
        }
        QVERIFY(std::abs(values[p] - expected[p]) <= 1e-9 * std::sqrt(reference.eigenvalues[0]));
      }
    }
  }

  void errorsNameTheProblem() {
    const QString dir = testing::tempDir();
    testing::writeCube(testing::correlatedCube(20, 20, 6, 1), (dir + "/in.tif").toStdString(),
                       GDT_Float32);
    testing::writeCube(testing::correlatedCube(20, 20, 5, 1), (dir + "/five.tif").toStdString(),
                       GDT_Float32);
    PcaOptions fit = fitOptions(dir, "fit");
    TestFeedback feedback;
    runPca(fit, feedback);
    auto failure = [&](const PcaOptions& options) -> std::pair<QString, QString> {
      try {
        runApply(options, feedback);
      } catch (const Error& e) {
        return {QString::fromStdString(e.parameter()), e.what()};
      }
      return {};
    };
    // Fewer bands than the transform's, no BANDS given: the statistics do not fit the image.
    auto [parameter, message] =
        failure(applyOptions(fit, (dir + "/five.tif").toStdString(), dir + "/a.tif"));
    QCOMPARE(parameter, QString("STATS"));
    QVERIFY2(message.contains("fitted on 6 bands") && message.contains("band 6 does not exist"),
             qPrintable(message));
    // As many bands selected as the transform's, but not that many.
    PcaOptions three = applyOptions(fit, fit.input, dir + "/b.tif");
    three.bands = {BandRange(1, 3)};
    std::tie(parameter, message) = failure(three);
    QCOMPARE(parameter, QString("BANDS"));
    QVERIFY2(message.contains("fitted on 6"), qPrintable(message));
    // Not statistics at all.
    QFile junk(dir + "/junk.json");
    QVERIFY(junk.open(QIODevice::WriteOnly));
    junk.write("{\"hello\": 1}");
    junk.close();
    PcaOptions notStats = applyOptions(fit, fit.input, dir + "/c.tif");
    notStats.savedTransform = (dir + "/junk.json").toStdString();
    std::tie(parameter, message) = failure(notStats);
    QCOMPARE(parameter, QString("STATS"));
    // Byte without the fitting run's ranges.
    PcaOptions byte = applyOptions(fit, fit.input, dir + "/d.tif");
    byte.outputType = OutputType::Byte;
    std::tie(parameter, message) = failure(byte);
    QCOMPARE(parameter, QString("OUTPUT_TYPE"));
    for (const char* name : {"/a.tif", "/b.tif", "/c.tif", "/d.tif"})
      QVERIFY(!QFile::exists(dir + name));
  }
};

QTEST_GUILESS_MAIN(ApplyTests)
#include "test_apply.moc"
