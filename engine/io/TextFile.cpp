#include "io/TextFile.h"

#include "core/Error.h"

#include <QSaveFile>

namespace hyperstream {

void saveFileAtomically(const std::string& path, const QByteArray& content,
                        const std::string& parameter) {
  QSaveFile file(QString::fromStdString(path));
  // Unbuffered: QSaveFile notes a failed write (a full disk) only where it writes itself, not
  // where its buffer is flushed, and would commit an empty or cut file.
  if (!file.open(QIODevice::WriteOnly | QIODevice::Unbuffered) ||
      file.write(content) != content.size() || !file.commit())
    throw Error(parameter, "cannot write '" + path + "': " + file.errorString().toStdString());
}

}  // namespace hyperstream
