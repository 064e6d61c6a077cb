// Inputs as products come (issue 36): by any name GDAL opens (a subdataset of a container, as EMIT
// ships netCDF; a page of a multi-page TIFF; a file inside a ZIP), each read as the same cube
// written plainly, a container given whole naming its subdatasets; and a fill value the file does
// not declare, declared by --nodata.

#include "TestSupport.h"
#include "io/Raster.h"

#include <cpl_vsi.h>
#include <gdal_priv.h>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include <memory>

namespace {

struct Run {
  int exitCode = -1;
  QString err;
};

Run run(const QStringList& arguments) {
  QProcess process;
  process.start(QStringLiteral(HYPERSTREAM_CLI), arguments + QStringList{"--quiet"});
  process.waitForFinished(120000);
  return {process.exitCode(), process.readAllStandardError()};
}

// A cube with a fill value: 30 × 40 × 12, UInt16 DN.
testing::Cube scene() {
  testing::Cube cube = testing::correlatedCube(30, 40, 12, 36, 3000.0, 300.0);
  testing::roundValues(cube);
  return cube;
}

// Runs PCA of `input` and of the plain GeoTIFF of the same cube; their components must be equal
// bit for bit.
void expectSamePca(const QString& input, const QString& plain, const QString& dir) {
  const QString ours = dir + "/ours.tif", reference = dir + "/reference.tif";
  const Run named = run({"pca", input, ours, "--components", "4"});
  QVERIFY2(named.exitCode == 0, qPrintable(input + " -> " + named.err));
  const Run direct = run({"pca", plain, reference, "--components", "4"});
  QVERIFY2(direct.exitCode == 0, qPrintable(direct.err));
  const std::vector<double> a = testing::samplesOf(ours), b = testing::samplesOf(reference);
  QVERIFY(!a.empty());
  QVERIFY(a == b);
  QFile::remove(ours);
  QFile::remove(reference);
}

}  // namespace

class InputTests : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { GDALAllRegister(); }

  // NETCDF:"file":array reads the array as the cube; the file whole names its two subdatasets.
  void netcdfSubdataset() {
    if (!GetGDALDriverManager()->GetDriverByName("netCDF")) QSKIP("GDAL without netCDF");
    const QString dir = testing::tempDir();
    const testing::Cube cube = scene();
    testing::writeCube(cube, (dir + "/plain.tif").toStdString(), GDT_UInt16);
    testing::writeNetcdfCube(cube, (dir + "/scene.nc").toStdString());
    const QString subdataset = "NETCDF:\"" + dir + "/scene.nc\":reflectance";
    QVERIFY(testing::samplesOf(subdataset) ==
            testing::samplesOf(dir + "/plain.tif"));  // the fixture's image order
    expectSamePca(subdataset, dir + "/plain.tif", dir);

    const Run whole = run({"pca", dir + "/scene.nc", dir + "/out.tif"});
    QCOMPARE(whole.exitCode, 1);
    QVERIFY2(whole.err.contains("error [INPUT]") && whole.err.contains("2 subdataset(s)") &&
                 whole.err.contains(subdataset) && whole.err.contains(":mask"),
             qPrintable(whole.err));
    QCOMPARE(whole.err.trimmed().count('\n'), 0);  // one line, as every error

    const Run missing = run({"pca", "NETCDF:\"" + dir + "/none.nc\":reflectance", dir + "/o.tif"});
    QCOMPARE(missing.exitCode, 1);
    QVERIFY2(missing.err.contains("error [INPUT]") &&
                 missing.err.contains("the file '" + dir + "/none.nc'") &&
                 missing.err.contains("does not exist"),
             qPrintable(missing.err));
    // The container is a file the run reads: never an output.
    const QByteArray before = [&] {
      QFile file(dir + "/scene.nc");
      return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
    }();
    const Run over = run({"pca", subdataset, dir + "/scene.nc", "--format", "GTiff"});
    QCOMPARE(over.exitCode, 1);
    QVERIFY2(over.err.contains("error [OUTPUT]") && over.err.contains("read by this run"),
             qPrintable(over.err));
    QFile file(dir + "/scene.nc");
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), before);
  }

  // GTIFF_DIR:N:file (no quotes: the file is the part of the name that exists).
  void tiffPage() {
    const QString dir = testing::tempDir();
    const testing::Cube cube = scene();
    testing::writeCube(cube, (dir + "/plain.tif").toStdString(), GDT_UInt16);
    expectSamePca("GTIFF_DIR:1:" + dir + "/plain.tif", dir + "/plain.tif", dir);
    const Run none = run({"pca", "GTIFF_DIR:1:" + dir + "/none.tif", dir + "/o.tif"});
    QCOMPARE(none.exitCode, 1);
    QVERIFY2(none.err.contains("error [INPUT]") && none.err.contains("names no existing file"),
             qPrintable(none.err));
  }

  // /vsizip/: a GeoTIFF inside a ZIP archive, read where it lies.
  void insideZip() {
    const QString dir = testing::tempDir();
    const testing::Cube cube = scene();
    testing::writeCube(cube, (dir + "/plain.tif").toStdString(), GDT_UInt16);
    QFile plain(dir + "/plain.tif");
    QVERIFY(plain.open(QIODevice::ReadOnly));
    const QByteArray bytes = plain.readAll();
    const QString inZip = "/vsizip/" + dir + "/scene.zip/scene.tif";
    VSILFILE* entry = VSIFOpenL(inZip.toUtf8().constData(), "wb");
    QVERIFY(entry);
    QCOMPARE(VSIFWriteL(bytes.constData(), 1, bytes.size(), entry), size_t(bytes.size()));
    QCOMPARE(VSIFCloseL(entry), 0);
    expectSamePca(inZip, dir + "/plain.tif", dir);
  }

  // --nodata declares the fill of a file that declares none: the same components as the file
  // with its nodata declared; a value the samples cannot hold is refused.
  void declaredNodata() {
    const QString dir = testing::tempDir();
    testing::Cube cube = scene();
    for (int64_t row = 0; row < cube.rows; ++row)
      for (int b = 0; b < cube.bands; ++b) cube.at(row, 0, b) = cube.at(row, 1, b) = 0;  // fill
    testing::writeCube(cube, (dir + "/undeclared.tif").toStdString(), GDT_UInt16);
    cube.nodata.assign(cube.bands, 0.0);
    testing::writeCube(cube, (dir + "/declared.tif").toStdString(), GDT_UInt16);
    const QString ours = dir + "/ours.tif", reference = dir + "/reference.tif";
    QCOMPARE(
        run({"pca", dir + "/undeclared.tif", ours, "--components", "4", "--nodata", "0"}).exitCode,
        0);
    QCOMPARE(run({"pca", dir + "/declared.tif", reference, "--components", "4"}).exitCode, 0);
    QVERIFY(!testing::samplesOf(ours).empty() &&
            testing::samplesOf(ours) == testing::samplesOf(reference));
    QCOMPARE(
        run({"pca", dir + "/undeclared.tif", dir + "/filled.tif", "--components", "4"}).exitCode,
        0);
    QVERIFY(testing::samplesOf(dir + "/filled.tif") !=
            testing::samplesOf(reference));  // the fill counted valid

    for (const QString& value : {QString("-1"), QString("0.5"), QString("70000"), QString("x")}) {
      const Run refused = run({"pca", dir + "/undeclared.tif", dir + "/o.tif", "--nodata", value});
      QCOMPARE(refused.exitCode, 1);
      QVERIFY2(refused.err.contains("error [NODATA]"), qPrintable(refused.err));
    }
    QVERIFY(!QFile::exists(dir + "/o.tif"));
  }

  // Bands that are nodata everywhere (a product's water-vapour windows) are left out with a
  // warning naming them: the same results as leaving them out by hand. Valid samples in
  // different pixels of different bands still leave no valid pixel.
  void bandsEmptyEverywhere() {
    const QString dir = testing::tempDir();
    testing::Cube cube = scene();
    cube.nodata.assign(cube.bands, 0.0);
    for (int64_t p = 0; p < cube.pixels(); ++p)
      for (int b : {4, 5, 6}) cube.values[p * cube.bands + b] = 0;  // bands 5-7
    cube.at(3, 3, 0) = 0;                                           // and one nodata pixel
    testing::writeCube(cube, (dir + "/windows.tif").toStdString(), GDT_UInt16);
    const QStringList withoutThem = {"--bands", "1-4,8-12"};
    for (const QStringList& job :
         {QStringList{"pca", "--components", "4"}, QStringList{"spp", "--window", "3"}}) {
      const QString ours = dir + "/ours.tif", reference = dir + "/reference.tif";
      QProcess process;
      process.start(QStringLiteral(HYPERSTREAM_CLI),
                    QStringList{job[0], dir + "/windows.tif", ours} + job.mid(1));
      QVERIFY(process.waitForFinished(120000));
      const QString log = process.readAllStandardError();
      QVERIFY2(process.exitCode() == 0, qPrintable(log));
      QVERIFY2(log.contains("bands 5-7 hold no valid sample anywhere"), qPrintable(log));
      const Run byHand =
          run(QStringList{job[0], dir + "/windows.tif", reference} + job.mid(1) + withoutThem);
      QVERIFY2(byHand.exitCode == 0, qPrintable(byHand.err));
      QVERIFY(!testing::samplesOf(ours).empty() &&
              testing::samplesOf(ours) == testing::samplesOf(reference));
    }
    for (const QString& method : {QString("atgp"), QString("vca")}) {
      const Run found = run({"endmembers", dir + "/windows.tif", dir + "/ours.csv", "--count", "3",
                             "--method", method});
      QVERIFY2(found.exitCode == 0, qPrintable(method + ": " + found.err));
      QVERIFY(run(QStringList{"endmembers", dir + "/windows.tif", dir + "/reference.csv", "--count",
                              "3", "--method", method} +
                  withoutThem)
                  .exitCode == 0);
      QFile a(dir + "/ours.csv"), b(dir + "/reference.csv");
      QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
      QCOMPARE(a.readAll(), b.readAll());
    }

    // Every band valid somewhere, no pixel valid in all: still no valid pixel.
    testing::Cube disjoint = scene();
    disjoint.nodata.assign(disjoint.bands, 0.0);
    for (int64_t p = 0; p < disjoint.pixels(); ++p)
      disjoint.values[p * disjoint.bands + p % disjoint.bands] = 0;
    testing::writeCube(disjoint, (dir + "/disjoint.tif").toStdString(), GDT_UInt16);
    const Run none = run({"pca", dir + "/disjoint.tif", dir + "/none.tif"});
    QCOMPARE(none.exitCode, 1);
    QVERIFY2(none.err.contains("error [INPUT]: no valid pixel"), qPrintable(none.err));
  }

  // Wavelengths and bad bands where tools put them: an ENVI header beside a GeoTIFF (micrometres),
  // the dataset's ENVI lists in a VRT (as the EnMAP-Box writes them), GDAL's IMAGERY domain, and
  // each band's 'bbl'. Leaving bands out by wavelength or by the list gives what leaving the
  // same bands out by number gives.
  void wavelengthsWhereverTheyAre() {
    const QString dir = testing::tempDir();
    const testing::Cube cube = scene();  // 12 bands at 400, 500, ... 1500 nm; 7-8 bad
    testing::writeCube(cube, (dir + "/plain.tif").toStdString(), GDT_UInt16);
    QString micrometres, nanometres, flags;
    for (int b = 0; b < cube.bands; ++b) {
      const QString comma = b ? ", " : "";
      micrometres += comma + QString::number(0.4 + 0.1 * b);
      nanometres += comma + QString::number(400 + 100 * b);
      flags += comma + (b == 6 || b == 7 ? "0" : "1");
    }
    // A copy of plain.tif in `driver`'s format, closed and opened again for update (a VRT holds
    // its source open until it is closed).
    auto copyOf = [&](const QString& name, const char* driver) {
      const QByteArray path = (dir + "/" + name).toUtf8();
      std::unique_ptr<GDALDataset> source = testing::openReadOnly(dir + "/plain.tif");
      GDALDriver* maker = GetGDALDriverManager()->GetDriverByName(driver);
      GDALClose(
          maker->CreateCopy(path.constData(), source.get(), false, nullptr, nullptr, nullptr));
      return std::unique_ptr<GDALDataset>(
          GDALDataset::FromHandle(GDALOpen(path.constData(), GA_Update)));
    };
    {  // an ENVI header beside the GeoTIFF
      QVERIFY(copyOf("beside.tif", "GTiff"));
      QFile header(dir + "/beside.hdr");
      QVERIFY(header.open(QIODevice::WriteOnly));
      header.write(("ENVI\nwavelength units = Micrometers\nwavelength = {\n " + micrometres +
                    "}\nbbl = {" + flags + "}\n")
                       .toUtf8());
    }
    {  // the dataset's ENVI lists in a VRT
      std::unique_ptr<GDALDataset> vrt = copyOf("lists.vrt", "VRT");
      QVERIFY(vrt);
      vrt->SetMetadataItem("wavelength", ("{" + nanometres + "}").toUtf8().constData(), "ENVI");
      vrt->SetMetadataItem("wavelength_units", "Nanometers", "ENVI");
      vrt->SetMetadataItem("bbl", ("{" + flags + "}").toUtf8().constData(), "ENVI");
    }
    {  // GDAL's IMAGERY domain and each band's bbl
      std::unique_ptr<GDALDataset> copy = copyOf("imagery.tif", "GTiff");
      QVERIFY(copy);
      for (int b = 1; b <= cube.bands; ++b) {
        GDALRasterBand* band = copy->GetRasterBand(b);
        band->SetMetadataItem("CENTRAL_WAVELENGTH_UM", QByteArray::number(0.3 + 0.1 * b),
                              "IMAGERY");
        band->SetMetadataItem("bbl", b == 7 || b == 8 ? "0" : "1");
      }
    }
    {  // a bad-band list of the wrong length
      std::unique_ptr<GDALDataset> vrt = copyOf("short.vrt", "VRT");
      QVERIFY(vrt);
      vrt->SetMetadataItem("bbl", "{1, 0, 1}", "ENVI");
    }
    const Run shortList = run({"pca", dir + "/short.vrt", dir + "/o.tif", "--use-bbl"});
    QCOMPARE(shortList.exitCode, 1);
    QVERIFY2(
        shortList.err.contains("error [USE_BBL]: the bad-band list has 3 entries for 12 bands"),
        qPrintable(shortList.err));
    const QString reference = dir + "/reference.tif";
    QCOMPARE(run({"pca", dir + "/plain.tif", reference, "--components", "4", "--bands", "1-6,9-12"})
                 .exitCode,
             0);
    for (const QString& name :
         {QString("beside.tif"), QString("lists.vrt"), QString("imagery.tif")}) {
      for (const QStringList& leaveOut :
           {QStringList{"--exclude-nm", "1000-1100"}, QStringList{"--use-bbl"}}) {
        const QString ours = dir + "/ours.tif";
        const Run result =
            run(QStringList{"pca", dir + "/" + name, ours, "--components", "4"} + leaveOut);
        QVERIFY2(result.exitCode == 0, qPrintable(name + ": " + result.err));
        QVERIFY2(testing::samplesOf(ours) == testing::samplesOf(reference),
                 qPrintable(name + " " + leaveOut.join(' ')));
        QFile::remove(ours);
      }
    }
  }

  // Outputs whose bands are input bands (spp, denoise, inverse; GeoTIFF and ENVI) carry the
  // selected bands' wavelengths, FWHM and bad-band flags, read back as the input's are, and
  // chain into EXCLUDE_NM and USE_BBL.
  void outputsKeepWavelengths() {
    const QString dir = testing::tempDir();
    const testing::Cube cube = scene();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16, "ENVI");
    {
      QFile header(dir + "/in.hdr");
      QVERIFY(header.open(QIODevice::Append));
      QString wavelengths, fwhm, flags;
      for (int b = 0; b < cube.bands; ++b) {
        const QString comma = b ? ", " : "";
        wavelengths += comma + QString::number(0.4 + 0.1 * b + 0.00125);
        fwhm += comma + QString::number(0.01 + 0.001 * b);
        flags += comma + (b == 6 || b == 7 ? "0" : "1");
      }
      header.write(("wavelength units = Micrometers\nwavelength = {" + wavelengths + "}\nfwhm = {" +
                    fwhm + "}\nbbl = {" + flags + "}\n")
                       .toUtf8());
    }
    const auto spectralOf = [](const QString& path) {
      const hyperstream::DatasetPtr dataset = hyperstream::openRaster(path.toStdString(), "INPUT");
      return hyperstream::describeRaster(*dataset, path.toStdString());
    };
    const hyperstream::RasterInfo input = spectralOf(dir + "/in.tif");
    QCOMPARE(input.wavelengths.size(), size_t{12});
    QVERIFY(input.fwhm[3] > 0 && input.goodBands.size() == 12);
    const std::vector<int> selected{2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // --bands 2-11
    QCOMPARE(run({"pca", dir + "/in.tif", dir + "/pcs.tif", "--components", "all", "--type",
                  "float64", "--stats", dir + "/pcs.json", "--bands", "2-11", "--quiet"})
                 .exitCode,
             0);
    for (const QString& extension : {QString("tif"), QString("bsq")}) {
      const QString format = extension == "tif" ? "GTiff" : "ENVI";
      const QStringList outputs{dir + "/spp." + extension, dir + "/den." + extension,
                                dir + "/inv." + extension};
      const QStringList tail{"--format", format, "--quiet"};
      QCOMPARE(
          run(QStringList{"spp", dir + "/in.tif", outputs[0], "--bands", "2-11"} + tail).exitCode,
          0);
      QCOMPARE(run(QStringList{"denoise", dir + "/in.tif", outputs[1], "--bands", "2-11",
                               "--components", "3"} +
                   tail)
                   .exitCode,
               0);
      QCOMPARE(run(QStringList{"inverse", dir + "/pcs.tif", dir + "/pcs.json", outputs[2]} + tail)
                   .exitCode,
               0);
      for (const QString& output : outputs) {
        const hyperstream::RasterInfo info = spectralOf(output);
        QCOMPARE(info.bandCount, 10);
        QCOMPARE(info.goodBands.size(), size_t{10});
        for (int b = 0; b < 10; ++b) {
          const int from = selected[b] - 1;
          QVERIFY2(std::abs(info.wavelengths[b] - input.wavelengths[from]) <=
                       1e-9 * input.wavelengths[from],
                   qPrintable(output));
          QVERIFY2(std::abs(info.fwhm[b] - input.fwhm[from]) <= 1e-9 * input.fwhm[from],
                   qPrintable(output));
          QCOMPARE(info.goodBands[b], input.goodBands[from]);
        }
        // The water windows of the issue; here 1000-1100 nm, and the bad bands.
        for (const QStringList& leaveOut :
             {QStringList{"--exclude-nm", "1000-1100"}, QStringList{"--use-bbl"}}) {
          const Run chained =
              run(QStringList{"pca", output, dir + "/chained.tif", "--components", "2", "--quiet"} +
                  leaveOut);
          QVERIFY2(chained.exitCode == 0, qPrintable(output + ": " + chained.err));
        }
      }
      if (extension == "bsq") {
        QFile header(dir + "/den.hdr");
        QVERIFY(header.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(header.readAll());
        QVERIFY2(text.contains("wavelength = {") && text.contains("fwhm = {") &&
                     text.contains("bbl = {") && text.contains("wavelength units = Nanometers"),
                 qPrintable(text));
      }
    }
  }

  // Fill values and lists that were silently misread: a Float32 fill of -1.23e34 given as
  // --nodata (compared in the file's type), an ENVI header's data ignore value that is no number
  // (GDAL reads it as 0), a wavelength list with an entry that is no number (said, not dropped).
  void fillsAndListsAsTheFileHasThem() {
    const QString dir = testing::tempDir();
    testing::Cube cube = scene();
    for (double& v : cube.values) v /= 10000;
    for (int64_t c = 0; c < cube.cols; ++c)
      for (int b = 0; b < cube.bands; ++b) cube.at(0, c, b) = -1.23e34;  // a fill row
    testing::writeCube(cube, (dir + "/f32.tif").toStdString(), GDT_Float32);
    const Run filled = run({"pca", dir + "/f32.tif", dir + "/p.tif", "--components", "2",
                            "--nodata", "-1.23e34", "--stats", dir + "/p.json"});
    QVERIFY2(filled.exitCode == 0, qPrintable(filled.err));
    QFile stats(dir + "/p.json");
    QVERIFY(stats.open(QIODevice::ReadOnly));
    QCOMPARE(QJsonDocument::fromJson(stats.readAll()).object().value("valid_pixels").toDouble(),
             static_cast<double>(cube.pixels() - cube.cols));
    testing::writeCube(scene(), (dir + "/in.tif").toStdString(), GDT_UInt16, "ENVI");
    QFile header(dir + "/in.hdr");
    QVERIFY(header.open(QIODevice::Append));
    header.write(
        "data ignore value = abc\nwavelength = {400, 500, 600, 700, 800, 900, 1000, "
        "1100, 1200, 1300, 1400, x}\nwavelength units = Nanometers\n");
    header.close();
    const Run ignored = run({"pca", dir + "/in.tif", dir + "/q.tif", "--components", "2"});
    QCOMPARE(ignored.exitCode, 1);
    QVERIFY2(ignored.err.contains("error [INPUT]") &&
                 ignored.err.contains("'data ignore value = abc' is not a number"),
             qPrintable(ignored.err));
    const Run listed = run({"pca", dir + "/in.tif", dir + "/q.tif", "--components", "2", "--nodata",
                            "0", "--exclude-nm", "1000-1100"});
    QCOMPARE(listed.exitCode, 1);
    QVERIFY2(listed.err.contains("error [EXCLUDE_NM]") &&
                 listed.err.contains("give 11 of the 12 bands a wavelength"),
             qPrintable(listed.err));
    const Run logged =
        run({"pca", dir + "/in.tif", dir + "/q.tif", "--components", "2", "--nodata", "0"});
    QVERIFY2(logged.exitCode == 0 && logged.err.contains("warning: No wavelengths: "),
             qPrintable(logged.err));
  }
};

QTEST_GUILESS_MAIN(InputTests)
#include "test_inputs.moc"
