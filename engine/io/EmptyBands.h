#pragma once
// Bands that hold no valid sample anywhere (a product's water-vapour windows filled with nodata):
// each of them makes every pixel invalid. A job that finds no valid pixel looks for them and, when
// there are some, runs again without them, saying which; "no valid pixel" remains for images
// where no band has a valid sample or the bands' valid samples lie in different pixels. A table
// of spectra made from the image (the endmembers') lacks those bands: a job given such a table
// leaves out the bands it lacks when every one of them is empty, so the chain works on the image
// it came from.

#include "core/Error.h"
#include "core/Feedback.h"
#include "core/JobOptions.h"

#include <gdal_priv.h>

#include <string>
#include <vector>

namespace hyperstream {

// Thrown where a job finds no valid pixel (Error "INPUT").
class NoValidPixel : public Error {
 public:
  explicit NoValidPixel(const std::string& message) : Error("INPUT", message) {}
};

// Thrown where a table of spectra gives no value for some selected bands (Error of the table's
// parameter); `bands` are those bands, 1-based.
class BandsNotGiven : public Error {
 public:
  BandsNotGiven(const std::string& parameter, const std::string& message, std::vector<int> bands)
      : Error(parameter, message), bands(std::move(bands)) {}
  std::vector<int> bands;
};

// Of `bands` (1-based), those with no finite sample other than the band's `nodata` (per band,
// NaN: none), read band by band in windows of rows within `ramBytes`, each band only until its
// first valid sample. Throws Error("INPUT") when the file cannot be read, Canceled when asked.
std::vector<int> bandsWithoutValidSamples(GDALDataset& dataset, const std::vector<int>& bands,
                                          const std::vector<double>& nodata, int64_t ramBytes,
                                          const Feedback& feedback);

// The bands of the job's input that `options` select, less those that hold no valid sample, as
// an explicit list; a warning names those left out. Rethrows `error` when there are none, or
// when fewer than two bands would be left.
BandList bandsWithValidSamples(const JobOptions& options, const NoValidPixel& error,
                               const std::string& job, Feedback& feedback);

// The bands of the job's input that `options` select, less those the table lacks (`error`), when
// every one of those holds no valid sample; a warning names them. Rethrows `error` otherwise.
BandList bandsTheTableGives(const JobOptions& options, const BandsNotGiven& error,
                            const std::string& job, Feedback& feedback);

// Runs job(options); when it finds no valid pixel because some selected bands hold none, or its
// table of spectra lacks bands that hold none, runs it once more without them.
template <class Options, class Job>
auto leavingOutEmptyBands(const Options& options, const std::string& name, Feedback& feedback,
                          Job job) -> decltype(job(options)) {
  Options fewer = options;
  try {
    return job(options);
  } catch (const NoValidPixel& error) {
    fewer.bands = bandsWithValidSamples(options, error, name, feedback);
  } catch (const BandsNotGiven& error) {
    fewer.bands = bandsTheTableGives(options, error, name, feedback);
  }
  return job(fewer);
}

}  // namespace hyperstream
