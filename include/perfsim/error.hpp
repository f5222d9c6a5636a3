#pragma once
// The one error type of perfsim. Library code throws; only main() decides exit codes.
#include <stdexcept>
#include <string>

namespace perfsim {

// Bad input: a file (or "<generated>"), a location inside it (node id, field, line, JSON
// pointer) and what is wrong. what() reads "file: location: problem".
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string location, std::string problem)
      : std::runtime_error(compose(file, location, problem)),
        file_(std::move(file)),
        location_(std::move(location)),
        problem_(std::move(problem)) {}

  const std::string& file() const { return file_; }
  const std::string& location() const { return location_; }
  const std::string& problem() const { return problem_; }

 private:
  static std::string compose(const std::string& file, const std::string& location,
                             const std::string& problem) {
    std::string out = file.empty() ? std::string("<input>") : file;
    if (!location.empty())
      out += ": " + location;
    out += ": " + problem;
    return out;
  }
  std::string file_;
  std::string location_;
  std::string problem_;
};

// A failure that is not the input's fault (I/O, an inconsistent model asset, a broken
// invariant). Carries the same "where: what" shape.
class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace perfsim
