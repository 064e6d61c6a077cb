#pragma once
// The statistics of a covariance fit (PCA, MNF, the image-wide detectors): JSON (everything needed
// to apply the same transform to another image: pca/SavedTransform.h reads it back) and CSV (one
// row per component).

#include "covariance/CovarianceRun.h"
#include "io/TextFile.h"

#include <QJsonObject>

#include <string>

namespace hyperstream {

QJsonObject statsJson(const CovarianceResult& result, const CovarianceOptions& options);
// Both write atomically (temporary file, renamed when complete); throw Error on failure.
void writeStatsJson(const CovarianceResult& result, const CovarianceOptions& options,
                    const std::string& path);
void writeTableCsv(const CovarianceResult& result, const std::string& path);

}  // namespace hyperstream
