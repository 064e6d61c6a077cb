#include "io/products/Products.h"

#include "core/Error.h"
#include "io/InputFiles.h"

namespace hyperstream {

namespace {

ProductName productName(const std::string& given) {
  ProductName name{given, given, {}};
  const SubdatasetName subdataset = parseSubdatasetName(given);
  if (!subdataset.isSubdataset) return name;
  name.file = subdataset.file;
  const size_t at = given.find(subdataset.file);
  size_t rest = at == std::string::npos ? given.size() : at + subdataset.file.size();
  if (rest < given.size() && given[rest] == '"') ++rest;
  if (rest < given.size() && given[rest] == ':') ++rest;
  name.component = given.substr(std::min(rest, given.size()));
  return name;
}

}  // namespace

std::unique_ptr<ProductDataset> openProduct(const std::string& given) {
  const ProductName name = productName(given);
  if (name.file.empty()) return nullptr;
  for (auto* reader : {readEmit, readPrisma, readXmlDescribed})
    if (std::optional<ProductCube> cube = reader(name))
      return std::make_unique<ProductDataset>(std::move(*cube));
  return nullptr;
}

bool isProduct(const std::string& name) {
  try {
    return openProduct(name) != nullptr;
  } catch (const Error&) {
    return true;
  }
}

std::unique_ptr<GDALDataset> openMultidimensional(const std::string& file,
                                                  std::initializer_list<const char*> drivers) {
  std::vector<const char*> allowed(drivers);
  allowed.push_back(nullptr);
  QuietGdalErrors quiet;
  return std::unique_ptr<GDALDataset>(GDALDataset::Open(
      file.c_str(), GDAL_OF_MULTIDIM_RASTER | GDAL_OF_READONLY, allowed.data(), nullptr, nullptr));
}

std::vector<double> attributeNumbers(const GDALIHasAttribute& owner, const std::string& name) {
  const std::shared_ptr<GDALAttribute> attribute = owner.GetAttribute(name);
  if (!attribute || attribute->GetDataType().GetClass() != GEDTC_NUMERIC) return {};
  return attribute->ReadAsDoubleArray();
}

std::string attributeText(const GDALIHasAttribute& owner, const std::string& name) {
  const std::shared_ptr<GDALAttribute> attribute = owner.GetAttribute(name);
  const char* text = attribute ? attribute->ReadAsString() : nullptr;
  return text ? text : "";
}

std::vector<double> arrayNumbers(const std::shared_ptr<GDALMDArray>& array) {
  if (!array || array->GetDimensionCount() != 1) return {};
  std::vector<double> values(static_cast<size_t>(array->GetDimensions()[0]->GetSize()));
  const GUInt64 start[1] = {0};
  const size_t count[1] = {values.size()};
  if (!array->Read(start, count, nullptr, nullptr, GDALExtendedDataType::Create(GDT_Float64),
                   values.data()))
    return {};
  return values;
}

}  // namespace hyperstream
