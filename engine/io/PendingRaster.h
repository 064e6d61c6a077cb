#pragma once
// An output raster written into a hidden folder beside its destination and moved over the
// destination only on commit(): a failure or cancel leaves no file and the destination untouched.
// The folder holds every file the driver writes (ENVI's .hdr, GDAL's .aux.xml) under the
// destination's own names, so that they all move with it.

#include "io/Orthorectify.h"
#include "io/PendingFiles.h"
#include "io/Raster.h"
#include "io/RawWriter.h"

#include <cpl_string.h>

#include <memory>
#include <string>
#include <vector>

namespace hyperstream {

// How an output raster is written: a GDAL driver and the user's creation options (NAME=VALUE).
struct RasterFormat {
  GDALDriver* driver = nullptr;
  std::vector<std::string> creationOptions;
};

// The format of an output written beside OUTPUT (alpha, rho, RMSE) at `path`: the driver
// `format` names (a format given applies to every output) or the one its own extension calls for,
// with OUTPUT's creation options where it is OUTPUT's driver (they were written for that one).
// Throws Error(parameter) when no driver creates such files.
RasterFormat formatBeside(const RasterFormat& main, const std::string& parameter,
                          const std::string& path, const std::string& format);

// Throws Error("CREATION_OPTIONS") for an option that is not NAME=VALUE or that the driver does
// not know or accept (GDAL itself would only warn, and ignore it).
void checkCreationOptions(const RasterFormat& format);

class PendingRaster {
 public:
  PendingRaster(const std::string& destination, const RasterFormat& format, int64_t width,
                int64_t height, int bands, GDALDataType type);
  // The same, written in image geometry (an uncompressed GeoTIFF in the hidden folder) and put on
  // the GLT's map grid, in `format`, by commit().
  PendingRaster(const std::string& destination, const RasterFormat& format, int64_t width,
                int64_t height, int bands, GDALDataType type,
                std::shared_ptr<const Orthorectification> orthorectification);
  ~PendingRaster();  // discards the raster unless committed, without filling its blocks first
  PendingRaster(const PendingRaster&) = delete;
  PendingRaster& operator=(const PendingRaster&) = delete;

  // The raster as GDAL has it; after write() it is opened again, so that GDAL reads the rows
  // written past it.
  GDALDataset& dataset();
  bool writesStraight() const { return raw_ != nullptr; }  // through a RawWriter
  // Rows [row0, row0 + rows) of every band from a pixel-interleaved strip of the raster's type:
  // straight into the file where it is an uncompressed GeoTIFF or ENVI file (RawWriter), else
  // through GDAL. Throws Error("OUTPUT"), or Canceled between parts when `feedback` is canceled.
  void write(int64_t row0, int64_t rows, const void* strip, const Feedback& feedback);
  // The raster's main file inside the hidden folder.
  const std::string& temporaryPath() const { return temporary_; }
  // For writers in other processes (an MPI run): closes the raster, so that GDAL writes its
  // header and allocates every block of an uncompressed file, and opens it again for update.
  // Other processes open temporaryPath() with openForUpdate() and write disjoint whole blocks.
  void reopen();
  // Closes the raster and lists the files it was written as, under the destination's names:
  // what commit() would move into place. For probing a driver; the raster is discarded after.
  std::vector<std::string> closeAndListFiles();
  // Flushes, closes and moves every file over the destination's; removes the files of the
  // dataset it replaces that the new one does not have (an old .aux.xml, .ovr, .hdr).
  void commit();

  // The hidden folder's name pattern, for recognising those of processes that died.
  static bool isPendingFolderName(const std::string& name, int64_t* pid, std::string* host);
  static std::string hostTag();  // this machine's name as pending folders carry it

 private:
  void create(int64_t width, int64_t height, int bands, GDALDataType type,
              const CPLStringList& options);
  void createOrDiscard(int64_t width, int64_t height, int bands, GDALDataType type,
                       const CPLStringList& options);
  // Removes the raster and its hidden folder, without filling its blocks first.
  void discard();
  void close();
  void checkFeaturesWritten(const std::vector<GIntBig>& features) const;
  void startRawWriting(const CPLStringList& options, GDALDataType type);
  void writeMapGrid();
  std::vector<std::string> folderFiles() const;

  std::string destination_;
  std::string folder_;
  std::string temporary_;
  GDALDriver* driver_;
  DatasetPtr dataset_;
  GDALDataType type_ = GDT_Unknown;
  std::unique_ptr<RawWriter> raw_;  // where the file takes samples straight
  bool rawWritten_ = false;         // rows written past GDAL since it opened the file
  PendingFiles pending_;
  bool committed_ = false;
  std::shared_ptr<const Orthorectification> orthorectification_;
  RasterFormat mapFormat_;
  std::string mapTemporary_;  // the map grid's file, in the destination's format
};

// A new hidden folder beside `destination` for files that exist only while a job runs, named so
// that the next run there removes it if this process dies (isPendingFolderName); registered in
// `pending`. Throws Error("OUTPUT") when it cannot be made.
std::string makePendingFolder(const std::string& destination, PendingFiles& pending);

// A pending raster of `bands` bands of `type` over the same grid as `input`: its size,
// geotransform and CRS.
std::unique_ptr<PendingRaster> createLike(const RasterInfo& input, const std::string& destination,
                                          const RasterFormat& format, int bands, GDALDataType type);

// Opens a raster that another process created for update; throws Error(parameter).
DatasetPtr openForUpdate(const std::string& path, const std::string& parameter);

// The files of an existing raster dataset at `path` (its sidecars included), or {path} when GDAL
// cannot open it or it is not a regular file, or nothing when there is no such file.
std::vector<std::string> existingDatasetFiles(const std::string& path);

// Creation options for an output that several processes write at once, each its own rows: only
// raw layouts whose blocks never straddle two processes' rows (GeoTIFF strips of one row,
// uncompressed and untiled; ENVI). Throws Error("OUTPUT") for another format,
// Error("CREATION_OPTIONS") for an option that breaks it.
std::vector<std::string> sharedWritingOptions(GDALDriver* driver,
                                              std::vector<std::string> creationOptions);

}  // namespace hyperstream
