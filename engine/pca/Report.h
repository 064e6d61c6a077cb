#pragma once
// The statistics report of a PCA run: JSON (everything needed to apply the same transform to
// another image) and CSV (one row per component).

#include "io/TextFile.h"
#include "pca/PcaJob.h"

#include <QJsonObject>

#include <string>

namespace hyperstream {

QJsonObject statsJson(const PcaResult& result, const PcaOptions& options);
// Both write atomically (temporary file, renamed when complete); throw Error on failure.
void writeStatsJson(const PcaResult& result, const PcaOptions& options, const std::string& path);
void writeTableCsv(const PcaResult& result, const std::string& path);

}  // namespace hyperstream
