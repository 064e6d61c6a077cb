#include "io/products/StoredArray.h"

#include <hdf5.h>

#include <cstring>
#include <vector>

namespace hyperstream {

namespace {

// An HDF5 identifier, closed when it goes.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// HDF5 prints its error stack for every failed call unless told not to; told so for this
// thread's calls until the end of the scope, then as it was.
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &function_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, function_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t function_ = nullptr;
  void* data_ = nullptr;
};

// The GDAL type of an HDF5 numeric type in this machine's byte order; GDT_Unknown otherwise.
GDALDataType nativeType(hid_t type) {
  const H5T_class_t kind = H5Tget_class(type);
  if (H5Tget_order(type) != H5Tget_order(H5T_NATIVE_INT)) return GDT_Unknown;
  const size_t size = H5Tget_size(type);
  if (kind == H5T_FLOAT) return size == 4 ? GDT_Float32 : size == 8 ? GDT_Float64 : GDT_Unknown;
  if (kind != H5T_INTEGER) return GDT_Unknown;
  const bool isSigned = H5Tget_sign(type) == H5T_SGN_2;
  switch (size) {
    case 1:
      return isSigned ? GDT_Unknown : GDT_Byte;  // GDAL 3.6 has no Int8
    case 2:
      return isSigned ? GDT_Int16 : GDT_UInt16;
    case 4:
      return isSigned ? GDT_Int32 : GDT_UInt32;
    default:
      return GDT_Unknown;
  }
}

std::optional<StoredArray> plainLayout(const std::string& file, const std::string& name) {
  QuietHdf5 quiet;
  const Id handle(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!handle.valid()) return std::nullopt;
  const Id dataset(H5Dopen2(handle.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.valid()) return std::nullopt;
  const Id creation(H5Dget_create_plist(dataset.get()), H5Pclose);
  if (!creation.valid() || H5Pget_layout(creation.get()) != H5D_CONTIGUOUS ||
      H5Pget_nfilters(creation.get()) != 0)
    return std::nullopt;
  const haddr_t offset = H5Dget_offset(dataset.get());  // from the start of the file
  const Id type(H5Dget_type(dataset.get()), H5Tclose);
  const Id space(H5Dget_space(dataset.get()), H5Sclose);
  if (offset == HADDR_UNDEF || !type.valid() || !space.valid() ||
      H5Sget_simple_extent_ndims(space.get()) != 3)
    return std::nullopt;
  StoredArray stored;
  stored.file = file;
  stored.offset = offset;
  stored.type = nativeType(type.get());
  hsize_t sizes[3];
  H5Sget_simple_extent_dims(space.get(), sizes, nullptr);
  for (int d = 0; d < 3; ++d) stored.sizes[d] = sizes[d];
  if (stored.type == GDT_Unknown) return std::nullopt;
  return stored;
}

// Closes a VSI file when it goes.
struct VsiClose {
  void operator()(VSILFILE* file) const { VSIFCloseL(file); }
};

}  // namespace

std::optional<StoredArray> storedArray(const std::string& file, const GDALMDArray& array) {
  std::optional<StoredArray> stored = plainLayout(file, array.GetFullName());
  if (!stored) return std::nullopt;
  const auto& dimensions = array.GetDimensions();
  for (size_t d = 0; d < 3; ++d)
    if (dimensions.size() != 3 || dimensions[d]->GetSize() != stored->sizes[d]) return std::nullopt;
  // A check that the file's way reads what GDAL reads: the middle row, whole.
  const uint64_t start[3] = {stored->sizes[0] / 2, 0, 0};
  const size_t counts[3] = {1, static_cast<size_t>(stored->sizes[1]),
                            static_cast<size_t>(stored->sizes[2])};
  const size_t bytes = counts[1] * counts[2] * GDALGetDataTypeSizeBytes(stored->type);
  std::vector<unsigned char> ours(bytes), gdals(bytes);
  const std::unique_ptr<VSILFILE, VsiClose> opened(VSIFOpenL(file.c_str(), "rb"));
  const GUInt64 gdalStart[3] = {start[0], 0, 0};
  if (!opened || !readStored(opened.get(), *stored, start, counts, ours.data()) ||
      !array.Read(gdalStart, counts, nullptr, nullptr, GDALExtendedDataType::Create(stored->type),
                  gdals.data()) ||
      std::memcmp(ours.data(), gdals.data(), bytes) != 0)
    return std::nullopt;
  return stored;
}

bool readStored(VSILFILE* file, const StoredArray& array, const uint64_t start[3],
                const size_t counts[3], unsigned char* out) {
  const auto& sizes = array.sizes;
  const uint64_t sample = GDALGetDataTypeSizeBytes(array.type);
  // Runs of consecutive samples: the last dimension's, joined across the dimensions before it
  // while those after are whole.
  uint64_t run = counts[2];
  int joined = 2;  // dimensions from this one on lie in one run
  if (counts[2] == sizes[2]) {
    run *= counts[1];
    joined = 1;
    if (counts[1] == sizes[1]) {
      run *= counts[0];
      joined = 0;
    }
  }
  const uint64_t outer0 = joined >= 1 ? counts[0] : 1, outer1 = joined == 2 ? counts[1] : 1;
  const size_t runBytes = run * sample;
  for (uint64_t i0 = 0; i0 < outer0; ++i0)
    for (uint64_t i1 = 0; i1 < outer1; ++i1) {
      const uint64_t index = ((start[0] + i0) * sizes[1] + start[1] + i1) * sizes[2] + start[2];
      if (VSIFSeekL(file, array.offset + index * sample, SEEK_SET) != 0 ||
          VSIFReadL(out, 1, runBytes, file) != runBytes)
        return false;
      out += runBytes;
    }
  return true;
}

}  // namespace hyperstream
