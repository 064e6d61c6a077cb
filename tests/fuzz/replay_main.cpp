// Runs a fuzz target's LLVMFuzzerTestOneInput on every file of the folders and files given: the
// corpus and every crash found, replayed as a regression test in the normal build (no libFuzzer).

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <cstdint>
#include <cstdio>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    const QFileInfo given(QString::fromLocal8Bit(argv[i]));
    QStringList paths{given.filePath()};
    if (given.isDir()) {
      paths.clear();
      for (const QString& name : QDir(given.filePath()).entryList(QDir::Files, QDir::Name))
        paths << given.filePath() + "/" + name;
    }
    for (const QString& path : paths) {
      QFile file(path);
      if (!file.open(QIODevice::ReadOnly)) {
        std::fprintf(stderr, "cannot read %s\n", qPrintable(path));
        return 1;
      }
      const QByteArray bytes = file.readAll();
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.constData()),
                             static_cast<size_t>(bytes.size()));
      ++files;
    }
  }
  std::printf("%d input(s) replayed\n", files);
  return files > 0 ? 0 : 1;
}
