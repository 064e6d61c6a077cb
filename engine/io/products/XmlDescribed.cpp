// EnMAP (L1B, L1C, L2A) and DESIS (L1B, L1C, L2A): a GeoTIFF `...SPECTRAL_IMAGE.TIF` of DN and an
// XML file `...METADATA.XML` beside it whose `bandCharacterisation` gives each band's centre
// wavelength, width, gain and offset (value = DN * gain + offset):
//   EnMAP: bandID[@number] / wavelengthCenterOfBand, FWHMOfBand, GainOfBand, OffsetOfBand;
//   DESIS: band / bandNumber, wavelengthCenterOfBand, wavelengthWidthOfBand, gainOfBand,
//          offsetOfBand.
// Either file may be given. Fill is the GeoTIFF's nodata, else the XML's noDataValue. Once both
// files are there the product is known: metadata that cannot be parsed, a missing
// bandCharacterisation, or a field that is not a number (or a gain that is not positive, or
// given for some bands only) is an [INPUT] error naming the file and the field, never a plain
// GeoTIFF of DN.

#include "core/Error.h"
#include "io/products/Products.h"

#include <cpl_minixml.h>
#include <cpl_string.h>

#include <QFileInfo>

#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

namespace hyperstream {

namespace {

struct XmlDeleter {
  void operator()(CPLXMLNode* node) const { CPLDestroyXMLNode(node); }
};
using XmlPtr = std::unique_ptr<CPLXMLNode, XmlDeleter>;

bool endsWithNoCase(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && EQUAL(text.c_str() + text.size() - end.size(), end.c_str());
}

// The partner of `path` (the image of a metadata file, or the other way): the file beside it
// named as `path` with `from` replaced by `to`, case aside (EnMAP writes METADATA.XML, DESIS
// METADATA.xml); empty when there is none.
std::string partner(const std::string& path, const std::string& from, const std::string& to) {
  if (!endsWithNoCase(path, from)) return {};
  const std::string wanted = CPLGetFilename(path.c_str());
  const std::string name = wanted.substr(0, wanted.size() - from.size()) + to;
  const std::string folder = CPLGetPath(path.c_str());
  const CPLStringList entries(VSIReadDir(folder.empty() ? "." : folder.c_str()));
  for (int i = 0; i < entries.size(); ++i)
    if (EQUAL(entries[i], name.c_str()))
      return folder.empty() ? std::string(entries[i]) : folder + "/" + entries[i];
  return {};
}

// The text of the first child element of `node` named (case aside) one of `names`.
const char* childText(const CPLXMLNode* node, std::initializer_list<const char*> names) {
  for (const CPLXMLNode* child = node->psChild; child; child = child->psNext) {
    if (child->eType != CXT_Element) continue;
    for (const char* name : names)
      if (EQUAL(child->pszValue, name)) return CPLGetXMLValue(child, nullptr, nullptr);
  }
  return nullptr;
}

// What a product's metadata say, for errors: "'ENMAP01-...-METADATA.XML' (EnMAP)".
struct MetadataFile {
  std::string path, sensor;
  Error error(const std::string& problem) const {
    return Error("INPUT", "'" + path + "' (" + sensor + " metadata) " + problem +
                              ": the image's values cannot be read without it");
  }
};

// The number a field holds, the whole text (spaces aside) and finite; nullopt for no field. Read
// as decimal in the C locale whatever the process's (QGIS under a German locale reads "0,5").
std::optional<double> fieldNumber(const char* text, const MetadataFile& file,
                                  const std::string& field, const std::string& where) {
  if (!text) return std::nullopt;
  const QString trimmed = QString::fromUtf8(text).trimmed();
  bool ok = false;
  const double value = trimmed.toDouble(&ok);
  if (!ok || !std::isfinite(value))
    throw file.error("gives " + field + " '" + trimmed.left(40).toStdString() + "'" + where +
                     ", not a number");
  return value;
}

// The first element named `name` anywhere below `node`, case aside.
const CPLXMLNode* findElement(const CPLXMLNode* node, const char* name) {
  for (; node; node = node->psNext) {
    if (node->eType != CXT_Element) continue;
    if (EQUAL(node->pszValue, name)) return node;
    if (const CPLXMLNode* found = findElement(node->psChild, name)) return found;
  }
  return nullptr;
}

// The bands of `characterisation`, each with its wavelength, width, gain and offset. A gain
// or offset given for some bands must be given for all (a band left in DN among bands in
// reflectance is no cube); gains are positive.
std::vector<PresentedBand> describedBands(const CPLXMLNode& characterisation,
                                          const MetadataFile& file) {
  std::vector<PresentedBand> bands;
  int gains = 0, offsets = 0;
  for (const CPLXMLNode* node = characterisation.psChild; node; node = node->psNext) {
    if (node->eType != CXT_Element) continue;
    PresentedBand band;
    band.index = static_cast<int64_t>(bands.size());
    const std::string where = " for band " + std::to_string(band.index + 1);
    const auto number = [&](std::initializer_list<const char*> names, const char* field) {
      return fieldNumber(childText(node, names), file, field, where);
    };
    const std::optional<double> wavelength =
        number({"wavelengthCenterOfBand"}, "wavelengthCenterOfBand");
    if (!wavelength || !(*wavelength > 0))
      throw file.error("gives no positive wavelengthCenterOfBand" + where);
    band.wavelength = *wavelength;
    band.fwhm =
        number({"FWHMOfBand", "wavelengthWidthOfBand"}, "the band's width").value_or(std::nan(""));
    const std::optional<double> gain = number({"GainOfBand"}, "GainOfBand");
    const std::optional<double> offset = number({"OffsetOfBand"}, "OffsetOfBand");
    if (gain && !(*gain > 0)) throw file.error("gives GainOfBand " + std::to_string(*gain) + where);
    gains += gain.has_value();
    offsets += offset.has_value();
    band.scale = gain.value_or(1.0);
    band.offset = offset.value_or(0.0);
    band.description = "band " + std::to_string(band.index + 1);
    bands.push_back(band);
  }
  const auto count = static_cast<int>(bands.size());
  for (const auto& [given, field] : {std::pair{gains, "GainOfBand"}, {offsets, "OffsetOfBand"}})
    if (given != 0 && given != count)
      throw file.error("gives " + std::string(field) + " for " + std::to_string(given) +
                       " of its " + std::to_string(count) + " bands");
  return bands;
}

std::string levelIn(const std::string& file) {
  const std::string name =
      QFileInfo(QString::fromStdString(file)).fileName().toUpper().toStdString();
  for (const char* level : {"L1B", "L1C", "L2A"})
    if (name.find(level) != std::string::npos) return level;
  return "";
}

}  // namespace

std::optional<ProductCube> readXmlDescribed(const ProductName& name) {
  if (!name.component.empty()) return std::nullopt;
  // The image and its metadata, whichever of the two was given.
  std::string image, metadata;
  for (const char* imageSuffix : {"SPECTRAL_IMAGE.TIF", "SPECTRAL_IMAGE.TIFF"}) {
    if (endsWithNoCase(name.file, imageSuffix)) {
      image = name.file;
      metadata = partner(name.file, imageSuffix, "METADATA.XML");
    } else if (image.empty() && endsWithNoCase(name.file, "METADATA.XML")) {
      metadata = name.file;
      image = partner(name.file, "METADATA.XML", imageSuffix);
    }
  }
  if (image.empty() || metadata.empty()) return std::nullopt;
  const std::string upper =
      QFileInfo(QString::fromStdString(image)).fileName().toUpper().toStdString();
  const MetadataFile file{metadata, upper.rfind("DESIS", 0) == 0 ? "DESIS" : "EnMAP"};
  const std::string& sensor = file.sensor;
  XmlPtr xml;
  {
    QuietGdalErrors quiet;
    CPLErrorReset();
    xml.reset(CPLParseXMLFile(metadata.c_str()));
    if (!xml || CPLGetLastErrorType() >= CE_Failure)
      throw file.error(std::string("is not XML that can be read (") + CPLGetLastErrorMsg() + ")");
  }
  const CPLXMLNode* characterisation = findElement(xml.get(), "bandCharacterisation");
  if (!characterisation)
    throw file.error("has no bandCharacterisation (the bands' wavelengths and gains)");

  QuietGdalErrors quiet;
  const char* const gtiff[] = {"GTiff", nullptr};
  std::shared_ptr<GDALDataset> raster(
      GDALDataset::Open(image.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY, gtiff, nullptr, nullptr));
  if (!raster)
    throw Error("INPUT", "'" + image + "' (" + sensor +
                             ") is not a GeoTIFF GDAL can read: " + CPLGetLastErrorMsg());

  ProductCube product;
  product.product = sensor + " " + levelIn(image);
  product.files = {image, metadata};
  product.width = raster->GetRasterXSize();
  product.height = raster->GetRasterYSize();
  CubeSource source;
  source.raster = raster;
  int hasFill = 0;
  const double fill =
      raster->GetRasterCount() > 0 ? raster->GetRasterBand(1)->GetNoDataValue(&hasFill) : 0.0;
  if (hasFill) {
    source.fill = fill;
  } else if (const CPLXMLNode* node = findElement(xml.get(), "noDataValue")) {
    source.fill = fieldNumber(CPLGetXMLValue(node, nullptr, ""), file, "noDataValue", "");
  }
  product.bands = describedBands(*characterisation, file);
  bool scaled = false;
  for (const PresentedBand& band : product.bands)
    scaled = scaled || band.scale != 1 || band.offset != 0;
  if (static_cast<int>(product.bands.size()) != raster->GetRasterCount())
    throw Error("INPUT", "'" + metadata + "' describes " + std::to_string(product.bands.size()) +
                             " bands, '" + image + "' has " +
                             std::to_string(raster->GetRasterCount()));
  product.type = scaled ? GDT_Float32 : raster->GetRasterBand(1)->GetRasterDataType();
  product.units = scaled ? (levelIn(image) == "L2A" ? "reflectance" : "radiance") : "DN";
  if (source.fill) product.nodata = scaled ? -9999.0 : *source.fill;
  product.sources.push_back(source);
  product.hasGeoTransform = GDALGetGeoTransform(GDALDataset::ToHandle(raster.get()),
                                                product.geoTransform.data()) == CE_None;
  if (const OGRSpatialReference* crs = raster->GetSpatialRef()) {
    char* wkt = nullptr;
    if (crs->exportToWkt(&wkt) == OGRERR_NONE && wkt) product.crsWkt = wkt;
    CPLFree(wkt);
  }
  return product;
}

}  // namespace hyperstream
