// Sensors' products as downloaded (issue 36): EMIT netCDF, PRISMA HDF5-EOS, EnMAP and DESIS
// GeoTIFF + XML, written by ProductFixtures from their specifications. Each must read as the
// cube the specification's formulas give (image order, physical units, fill as nodata), the
// same as that cube written as a plain GeoTIFF: PCA and endmembers of both equal bit for bit.

#include "ProductFixtures.h"
#include "TestSupport.h"
#include "io/Raster.h"
#include "io/products/Products.h"

#include <gdal_priv.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <memory>
#include <utility>

namespace {

struct Run {
  int exitCode = -1;
  QString err;
};

Run run(const QStringList& arguments, bool quiet = true) {
  QProcess process;
  process.start(QStringLiteral(HYPERSTREAM_CLI),
                arguments + (quiet ? QStringList{"--quiet"} : QStringList{}));
  process.waitForFinished(120000);
  return {process.exitCode(), process.readAllStandardError()};
}

// How many of the product's arrays are read the file's way (StoredArray), not through GDAL.
int storedArrays(const QString& path) {
  hyperstream::ensureGdalDrivers();
  const std::unique_ptr<hyperstream::ProductDataset> product =
      hyperstream::openProduct(path.toStdString());
  int stored = 0;
  for (const hyperstream::CubeSource& source : product->cube().sources)
    stored += source.stored.has_value();
  return stored;
}

QByteArray contentOf(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// The product as the engine's reader presents it (through hyperstream's own view: the CLI's
// `pca` of both) equals the expected cube as a plain GeoTIFF: components and endmember table.
void expectSameAsPlain(const QString& input, const testing::Product& product, const QString& dir,
                       const QStringList& extra = {}) {
  const QString plain = dir + "/plain.tif";
  testing::writeCube(product.expected, plain.toStdString(), GDT_Float32);
  const Run ours = run(QStringList{"pca", input, dir + "/ours.tif", "--components", "5"} + extra);
  QVERIFY2(ours.exitCode == 0, qPrintable(input + " -> " + ours.err));
  const Run theirs =
      run(QStringList{"pca", plain, dir + "/plain-pca.tif", "--components", "5"} + extra);
  QVERIFY2(theirs.exitCode == 0, qPrintable(theirs.err));
  const std::vector<double> a = testing::samplesOf(dir + "/ours.tif"),
                            b = testing::samplesOf(dir + "/plain-pca.tif");
  QVERIFY(!a.empty());
  QVERIFY(a == b);
  const Run endmembers =
      run({"endmembers", input, dir + "/ours.csv", "--count", "4", "--method", "atgp"});
  QVERIFY2(endmembers.exitCode == 0, qPrintable(endmembers.err));
  const Run plainEndmembers =
      run({"endmembers", plain, dir + "/plain.csv", "--count", "4", "--method", "atgp"});
  QVERIFY2(plainEndmembers.exitCode == 0, qPrintable(plainEndmembers.err));
  // The same spectra (the header names the product's bands, the plain file's are unnamed).
  const auto spectra = [](const QString& csv) { return contentOf(csv).split('\n').mid(1); };
  QCOMPARE(spectra(dir + "/ours.csv"), spectra(dir + "/plain.csv"));
}

// The largest absolute value in an endmember table's spectra: reflectance is below 2, DN not.
double largestTableValue(const QString& csv) {
  double largest = 0;
  const QList<QByteArray> lines = contentOf(csv).split('\n');
  for (int i = 1; i < lines.size(); ++i) {
    const QList<QByteArray> fields = lines[i].split(',');
    for (int f = 3; f < fields.size(); ++f) {
      bool ok = false;
      const double value = fields[f].toDouble(&ok);
      if (ok) largest = std::max(largest, std::abs(value));
    }
  }
  return largest;
}

}  // namespace

class ProductTests : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { GDALAllRegister(); }

  void emitAsDownloaded() {
    if (!GetGDALDriverManager()->GetDriverByName("netCDF")) QSKIP("GDAL without netCDF");
    const QString dir = testing::tempDir();
    const QString file = dir + "/EMIT_L2A_RFL_001_20230801T200000_2321313_005.nc";
    const testing::Product product = testing::writeEmit(file.toStdString(), 50, 60, 361);
    QCOMPARE(storedArrays(file), 1);
    expectSameAsPlain(file, product, dir);
    QVERIFY(largestTableValue(dir + "/ours.csv") < 2.0);
    expectSameAsPlain("NETCDF:\"" + file + "\":reflectance", product, dir);
    // Wavelengths: --exclude-nm leaves out the water-vapour windows as --bands would.
    const Run excluded = run({"pca", file, dir + "/x.tif", "--components", "3", "--exclude-nm",
                              "1320-1440,1770-1965", "--use-bbl"},
                             false);
    QVERIFY2(excluded.exitCode == 0, qPrintable(excluded.err));
    QVERIFY2(!excluded.err.contains("constant band"), qPrintable(excluded.err));  // bbl: none
    QVERIFY2(excluded.err.contains("EMIT L2A RFL: 60 x 50 pixels, 285 bands in image order") &&
                 excluded.err.contains("values in reflectance") &&
                 excluded.err.contains("image geometry"),
             qPrintable(excluded.err));
    // The file a run reads is never its output.
    const QByteArray before = contentOf(file);
    const Run over = run({"pca", file, file, "--format", "GTiff"});
    QCOMPARE(over.exitCode, 1);
    QCOMPARE(contentOf(file), before);
  }

  // Reads GDAL's own way (any buffer type, bands in any order, a window): the view equals the
  // expected cube as a GeoTIFF, read the same way (Float32 from the file's layout, the other
  // types through GDAL's netCDF reads).
  void readsAsAnyRaster() {
    if (!GetGDALDriverManager()->GetDriverByName("netCDF")) QSKIP("GDAL without netCDF");
    const QString dir = testing::tempDir();
    const QString file = dir + "/EMIT_L2A_RFL_001_20230801T200000_2321313_008.nc";
    const testing::Product product = testing::writeEmit(file.toStdString(), 20, 30, 367);
    testing::writeCube(product.expected, (dir + "/plain.tif").toStdString(), GDT_Float32);
    hyperstream::ensureGdalDrivers();
    const hyperstream::DatasetPtr view = hyperstream::openRaster(file.toStdString(), "INPUT");
    std::unique_ptr<GDALDataset> plain = testing::openReadOnly(dir + "/plain.tif");
    int bands[] = {40, 3, 4, 5, 200};
    for (GDALDataType type : {GDT_Float32, GDT_Int16, GDT_Float64, GDT_Byte}) {
      std::vector<unsigned char> x(size_t{7 * 9 * 5} * GDALGetDataTypeSizeBytes(type)), y(x.size());
      QCOMPARE(
          view->RasterIO(GF_Read, 4, 6, 9, 7, x.data(), 9, 7, type, 5, bands, 0, 0, 0, nullptr),
          CE_None);
      QCOMPARE(
          plain->RasterIO(GF_Read, 4, 6, 9, 7, y.data(), 9, 7, type, 5, bands, 0, 0, 0, nullptr),
          CE_None);
      QVERIFY2(x == y, GDALGetDataTypeName(type));
    }
  }

  // Every map cell of an orthorectified output holds its GLT pixel's value of the
  // image-geometry output; cells outside the swath are nodata; CRS and geotransform the GLT's.
  void emitOrthorectified() {
    if (!GetGDALDriverManager()->GetDriverByName("netCDF")) QSKIP("GDAL without netCDF");
    const QString dir = testing::tempDir();
    const QString file = dir + "/EMIT_L2A_RFL_001_20230801T200000_2321313_006.nc";
    testing::writeEmit(file.toStdString(), 50, 60, 362);
    const Run image = run({"pca", file, dir + "/image.tif", "--components", "4"});
    QVERIFY2(image.exitCode == 0, qPrintable(image.err));
    for (const QString& format : {"GTiff", "ENVI"}) {
      const QString map = dir + (format == "ENVI" ? "/map.bsq" : "/map.tif");
      const Run ortho = run({"pca", file, map, "--components", "4", "--orthorectify", "--format",
                             format, "--ram", "64"});
      QVERIFY2(ortho.exitCode == 0, qPrintable(ortho.err));
      const testing::EmitGlt glt = testing::emitGlt(50, 60);
      std::unique_ptr<GDALDataset> mapped = testing::openReadOnly(map);
      QVERIFY(mapped);
      QCOMPARE(int64_t{mapped->GetRasterXSize()}, glt.width);
      QCOMPARE(int64_t{mapped->GetRasterYSize()}, glt.height);
      double transform[6];
      QCOMPARE(mapped->GetGeoTransform(transform), CE_None);
      for (int i = 0; i < 6; ++i) QCOMPARE(transform[i], glt.geoTransform[i]);
      QVERIFY(mapped->GetSpatialRef() && mapped->GetSpatialRef()->GetEPSGGeogCS() == 4326);
      int hasNodata = 0;
      const double nodata = mapped->GetRasterBand(1)->GetNoDataValue(&hasNodata);
      QVERIFY(hasNodata);
      const std::vector<double> source = testing::samplesOf(dir + "/image.tif");
      const std::vector<double> cells = testing::samplesOf(map);
      const int64_t bands = 4, pixels = glt.width * glt.height;
      int64_t filled = 0;
      for (int64_t b = 0; b < bands; ++b)
        for (int64_t cell = 0; cell < pixels; ++cell) {
          const double value = cells[b * pixels + cell];
          if (glt.row[cell] == 0) {
            QCOMPARE(value, nodata);
            continue;
          }
          const int64_t pixel = (glt.row[cell] - 1) * 60 + (glt.column[cell] - 1);
          const double expected = source[b * 3000 + pixel];
          QVERIFY2(value == expected || (std::isnan(value) && std::isnan(expected)),
                   qPrintable(QString("band %1 cell %2").arg(b + 1).arg(cell)));
          ++filled;
        }
      QVERIFY(filled > bands * 3000 / 2);
    }
    QCOMPARE(testing::filesIn(dir).filter("part").size(), 0);
    // A GLT none of whose cells names a pixel of the image: refused, no empty map written.
    {
      std::unique_ptr<GDALDataset> product(GDALDataset::FromHandle(
          GDALOpenEx(file.toUtf8().constData(), GDAL_OF_MULTIDIM_RASTER | GDAL_OF_UPDATE, nullptr,
                     nullptr, nullptr)));
      QVERIFY(product);
      auto x = product->GetRootGroup()->OpenGroup("location")->OpenMDArray("glt_x");
      QVERIFY(x);
      const testing::EmitGlt glt = testing::emitGlt(50, 60);
      std::vector<int32_t> beyond(static_cast<size_t>(glt.width * glt.height), 9999);
      const GUInt64 start[2] = {0, 0};
      const size_t count[2] = {static_cast<size_t>(glt.height), static_cast<size_t>(glt.width)};
      QVERIFY(x->Write(start, count, nullptr, nullptr, GDALExtendedDataType::Create(GDT_Int32),
                       beyond.data()));
    }
    const Run outside =
        run({"pca", file, dir + "/outside.tif", "--components", "4", "--orthorectify"});
    QCOMPARE(outside.exitCode, 1);
    QVERIFY2(outside.err.contains("error [ORTHORECTIFY]") &&
                 outside.err.contains("no cell of its GLT names a pixel"),
             qPrintable(outside.err));
    QVERIFY(!QFile::exists(dir + "/outside.tif"));
  }

  void prismaAsDownloaded() {
    if (!GetGDALDriverManager()->GetDriverByName("HDF5")) QSKIP("GDAL without HDF5");
    const QString dir = testing::tempDir();
    const QString file = dir + "/PRS_L2D_STD_20200627102358_20200627102402_0001.he5";
    const testing::Product product = testing::writePrisma(file.toStdString(), 50, 60, 363);
    QCOMPARE(product.expected.bands, 63 + 171);
    QCOMPARE(storedArrays(file), 2);
    expectSameAsPlain(file, product, dir);
    QVERIFY(largestTableValue(dir + "/ours.csv") < 2.0);
    // The map grid from the corners and EPSG code.
    std::unique_ptr<GDALDataset> components = testing::openReadOnly(dir + "/ours.tif");
    double transform[6];
    QCOMPARE(components->GetGeoTransform(transform), CE_None);
    QCOMPARE(transform[0], 500000.0);
    QCOMPARE(transform[1], 30.0);
    QCOMPARE(transform[5], -30.0);
    QCOMPARE(QString(components->GetSpatialRef()->GetAuthorityCode(nullptr)), QString("32633"));
    // One cube by its subdataset name: the VNIR bands alone, by wavelength.
    const testing::Product vnir = testing::bandsOf(product, "VNIR");
    QCOMPARE(vnir.expected.bands, 63);
    expectSameAsPlain("HDF5:\"" + file + "\"://HDFEOS/SWATHS/PRS_L2D_HCO/Data_Fields/VNIR_Cube",
                      vnir, dir);
  }

  // PRISMA L1: radiance = DN / ScaleFactor - Offset, in the swath's geometry. Its cubes in
  // compressed chunks: read through GDAL's HDF5 driver, where L2D's are read the file's way.
  void prismaLevel1() {
    if (!GetGDALDriverManager()->GetDriverByName("HDF5")) QSKIP("GDAL without HDF5");
    const QString dir = testing::tempDir();
    const QString file = dir + "/PRS_L1_STD_OFFL_20200627102358_20200627102402_0001.he5";
    const testing::Product product =
        testing::writePrisma(file.toStdString(), 40, 30, 366, testing::PrismaLevel::L1,
                             testing::Storage::CompressedChunks);
    QCOMPARE(storedArrays(file), 0);
    expectSameAsPlain(file, product, dir);
    std::unique_ptr<GDALDataset> components = testing::openReadOnly(dir + "/ours.tif");
    double transform[6];
    QVERIFY(components->GetGeoTransform(transform) != CE_None);  // no map grid
    const Run logged = run({"pca", file, dir + "/x.tif", "--components", "2"}, false);
    QVERIFY2(logged.err.contains("PRISMA L1:") && logged.err.contains("values in radiance"),
             qPrintable(logged.err));
  }

  void enmapAsDownloaded() {
    const QString dir = testing::tempDir();
    const testing::Product product = testing::writeEnmap(dir.toStdString(), 50, 60, 364);
    expectSameAsPlain(QString::fromStdString(product.path), product, dir);
    QVERIFY(largestTableValue(dir + "/ours.csv") < 2.0);
    // The metadata file given instead of the image; the bands fill everywhere named.
    const QString xml =
        QString::fromStdString(product.path).replace("SPECTRAL_IMAGE.TIF", "METADATA.XML");
    const Run fromXml =
        run({"pca", xml, dir + "/x.tif", "--components", "3", "--exclude-nm", "1340-1450"}, false);
    QVERIFY2(fromXml.exitCode == 0, qPrintable(fromXml.err));
    QVERIFY2(fromXml.err.contains("EnMAP L2A") && fromXml.err.contains("131") &&
                 fromXml.err.contains("132"),
             qPrintable(fromXml.err));
  }

  void desisAsDownloaded() {
    const QString dir = testing::tempDir();
    const testing::Product product = testing::writeDesis(dir.toStdString(), 50, 60, 365);
    expectSameAsPlain(QString::fromStdString(product.path), product, dir);
    QVERIFY(largestTableValue(dir + "/ours.csv") < 2.0);
  }

  // Metadata present but unusable (issue 55): an [INPUT] error naming the metadata file and the
  // field, never the image read as plain DN; no output written.
  void unusableXmlMetadataRefused() {
    const QString dir = testing::tempDir();
    struct Variant {
      bool desis;
      const char *from, *to, *named;
    };
    const Variant variants[] = {
        {false, "<GainOfBand>0.0001</GainOfBand>", "<GainOfBand>abc</GainOfBand>", "GainOfBand"},
        {false, "<GainOfBand>0.0001</GainOfBand>", "<GainOfBand>0.0001xyz</GainOfBand>",
         "GainOfBand"},
        {false, "<GainOfBand>0.0001</GainOfBand>", "", "GainOfBand for 223 of its 224"},
        {false, "<GainOfBand>0.0001</GainOfBand>", "<GainOfBand>-0.0001</GainOfBand>",
         "GainOfBand"},
        {false, "<GainOfBand>0.0001</GainOfBand>", "<GainOfBand>nan</GainOfBand>", "GainOfBand"},
        {false, "<GainOfBand>0.0001</GainOfBand>", "<GainOfBand>0x1p-13</GainOfBand>",
         "GainOfBand"},
        {false, "<OffsetOfBand>0</OffsetOfBand>", "<OffsetOfBand>1e999</OffsetOfBand>",
         "OffsetOfBand"},
        {false, "<wavelengthCenterOfBand>418</wavelengthCenterOfBand>",
         "<wavelengthCenterOfBand>blue</wavelengthCenterOfBand>", "wavelengthCenterOfBand"},
        {false, "bandCharacterisation>", "bandcharacterization>", "no bandCharacterisation"},
        {false, "</level_X>", "", "not XML"},
        {true, "<gainOfBand>0.0001</gainOfBand>", "<gainOfBand>0</gainOfBand>", "GainOfBand"},
        {true, "<noDataValue>-32768</noDataValue>", "<noDataValue>none</noDataValue>",
         "noDataValue"},
        {true, "<wavelengthWidthOfBand>2.55</wavelengthWidthOfBand>",
         "<wavelengthWidthOfBand>2,55</wavelengthWidthOfBand>", "width"},
    };
    int tried = 0;
    for (const Variant& variant : variants) {
      const QString folder = dir + QString("/v%1").arg(tried++);
      QDir().mkpath(folder);
      const testing::Product product = variant.desis
                                           ? testing::writeDesis(folder.toStdString(), 12, 10, 366)
                                           : testing::writeEnmap(folder.toStdString(), 12, 10, 366);
      QString xmlPath = QString::fromStdString(product.path);
      xmlPath.replace(QRegularExpression("SPECTRAL_IMAGE\\.(TIF|tif)$"),
                      variant.desis ? "METADATA.xml" : "METADATA.XML");
      QByteArray xml = contentOf(xmlPath);
      const int at = xml.indexOf(variant.from);
      QVERIFY2(at >= 0, variant.from);
      if (QByteArray(variant.named).startsWith("no "))  // a tag renamed: both of its ends
        xml.replace(variant.from, variant.to);
      else
        xml.replace(at, static_cast<int>(std::strlen(variant.from)), variant.to);
      QFile file(xmlPath);
      QVERIFY(file.open(QIODevice::WriteOnly) && file.write(xml) == xml.size());
      file.close();
      for (const QString& given : {QString::fromStdString(product.path), xmlPath}) {
        const QString output = folder + "/o.tif";
        const Run refused = run({"pca", given, output, "--components", "2"});
        QVERIFY2(refused.exitCode != 0 && refused.err.contains("[INPUT]") &&
                     refused.err.contains(QFileInfo(xmlPath).fileName()) &&
                     refused.err.contains(variant.named) && !refused.err.contains("ERROR 1"),
                 qPrintable(QString(variant.to) + ": " + refused.err));
        QVERIFY(!QFile::exists(output));
      }
    }
  }

  // EMIT: a file without _FillValue still has EMIT's fill -9999; PRISMA's scaling attributes
  // that give no scale are refused naming the attribute.
  void unusableAttributesRefused() {
    const QString dir = testing::tempDir();
    if (GetGDALDriverManager()->GetDriverByName("netCDF")) {
      const QString emitFile = dir + "/EMIT_L2A_RFL_001_20230101T000000_2300101_001.nc";
      const testing::Product product =
          testing::writeEmit(emitFile.toStdString(), 20, 16, 367, testing::FillAttribute::Absent);
      expectSameAsPlain(emitFile, product, dir);
    }
    const QString prisma = dir + "/PRS_L2D_STD_20230101.he5";
    for (const auto& [attribute, value] :
         {std::pair{"L2ScaleVnirMax", 0.0f}, {"L2ScaleSwirMin", std::nanf("")}}) {
      testing::writePrisma(prisma.toStdString(), 12, 10, 368);
      testing::setRootAttribute(prisma.toStdString(), attribute, value);
      const Run refused = run({"pca", prisma, dir + "/o.tif", "--components", "2"});
      QVERIFY2(refused.exitCode != 0 && refused.err.contains("[INPUT]") &&
                   refused.err.contains(attribute),
               qPrintable(refused.err));
    }
    testing::writePrisma(prisma.toStdString(), 12, 10, 368, testing::PrismaLevel::L1);
    testing::setRootAttribute(prisma.toStdString(), "ScaleFactor_Swir", -100.0f);
    const Run refused = run({"pca", prisma, dir + "/o.tif", "--components", "2"});
    QVERIFY2(refused.exitCode != 0 && refused.err.contains("ScaleFactor_Swir"),
             qPrintable(refused.err));
  }

  // A table made from an EnMAP product (whose two fill bands endmembers leaves out) chains back
  // onto the product: abundances, SAM and detection leave out the same bands, saying so (the
  // table lacks them, or, for the scene-wide detection fit, no pixel is valid with them).
  void tableChainsBackOntoItsProduct() {
    const QString dir = testing::tempDir();
    const testing::Product product = testing::writeEnmap(dir.toStdString(), 40, 36, 369);
    const QString image = QString::fromStdString(product.path);
    const Run endmembers =
        run({"endmembers", image, dir + "/e.csv", "--count", "3", "--method", "atgp"}, false);
    QVERIFY2(endmembers.exitCode == 0 && endmembers.err.contains("131-132"),
             qPrintable(endmembers.err));
    const QList<QStringList> chain = {
        {"abundances", image, dir + "/e.csv", dir + "/a.tif"},
        {"sam", image, dir + "/e.csv", dir + "/s.tif"},
        {"detect", image, dir + "/e.csv", dir + "/d.tif", "--method", "ace"},
        {"detect", image, dir + "/e.csv", dir + "/c.tif", "--per-column", "--method", "mf"}};
    for (const QStringList& step : chain) {
      const Run ran = run(step, false);
      QVERIFY2(ran.exitCode == 0 && ran.err.contains("131-132") && ran.err.contains("left out"),
               qPrintable(step.join(' ') + ": " + ran.err));
    }
    // A table lacking a band that has values is still refused.
    QByteArray table = contentOf(dir + "/e.csv");
    QList<QByteArray> lines = table.split('\n');
    for (QByteArray& line : lines) {
      QList<QByteArray> fields = line.split(',');
      if (fields.size() > 10) fields.removeAt(10);
      line = fields.join(',');
    }
    QFile less(dir + "/less.csv");
    QVERIFY(less.open(QIODevice::WriteOnly));
    less.write(lines.join('\n'));
    less.close();
    const Run refused = run({"abundances", image, dir + "/less.csv", dir + "/b.tif"});
    QVERIFY2(refused.exitCode != 0 && refused.err.contains("[ENDMEMBERS]"),
             qPrintable(refused.err));
  }
};

QTEST_GUILESS_MAIN(ProductTests)
#include "test_products.moc"
