#include "hdf5/column_table.hpp"

#include <H5Cpp.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "io/atomic_file.hpp"
#include "perfsim/error.hpp"

namespace perfsim::h5 {
namespace {

std::size_t column_length(const Column& column) {
  return std::visit([](const auto& values) { return values.size(); }, column);
}

template <class T>
const std::vector<T>& column_as(const ColumnTable& table, const std::string& name,
                                const char* wanted) {
  auto it = table.columns.find(name);
  if (it == table.columns.end())
    throw RuntimeFailure("HDF5 table: no column '" + name + "'");
  if (!std::holds_alternative<std::vector<T>>(it->second)) {
    throw RuntimeFailure("HDF5 table: column '" + name + "' is not " + wanted);
  }
  return std::get<std::vector<T>>(it->second);
}

void write_string_attribute(H5::H5Object& object, const std::string& name,
                            const std::string& value) {
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(H5T_CSET_UTF8);
  H5::Attribute attribute = object.createAttribute(name, type, H5::DataSpace(H5S_SCALAR));
  attribute.write(type, value);
}

std::string read_string_attribute(const H5::H5Object& object, const std::string& name) {
  H5::Attribute attribute = object.openAttribute(name);
  std::string value;
  attribute.read(attribute.getStrType(), value);
  return value;
}

// "/a/b/c" -> "/a", "/a/b", "/a/b/c" (empty components skipped).
std::vector<std::string> path_prefixes(const std::string& path) {
  std::vector<std::string> prefixes;
  std::string current;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos)
      end = path.size();
    if (end > start) {
      current.push_back('/');
      current.append(path, start, end - start);
      prefixes.push_back(current);
    }
    start = end + 1;
  }
  return prefixes;
}

H5::Group ensure_group(H5::H5File& file, const std::string& path) {
  const std::vector<std::string> prefixes = path_prefixes(path);
  for (const std::string& prefix : prefixes) {
    if (!file.nameExists(prefix))
      file.createGroup(prefix).close();
  }
  return file.openGroup(prefixes.empty() ? "/" : prefixes.back());
}

// H5Lexists fails (rather than answering no) when an intermediate group is missing, so walk
// the path one level at a time.
bool link_exists(H5::H5File& file, const std::string& path) {
  for (const std::string& prefix : path_prefixes(path)) {
    if (!file.nameExists(prefix))
      return false;
  }
  return true;
}

std::string normalize(const std::string& group_path) {
  return group_path.empty() || group_path[0] != '/' ? "/" + group_path : group_path;
}

}  // namespace

void ColumnTable::add(const std::string& name, Column column, const std::string& unit) {
  if (columns.count(name) == 0)
    column_order.push_back(name);
  columns[name] = std::move(column);
  if (!unit.empty())
    units[name] = unit;
}

std::size_t ColumnTable::rows() const {
  std::size_t rows = 0;
  bool first = true;
  for (const auto& [name, column] : columns) {
    std::size_t length = column_length(column);
    if (!first && length != rows) {
      throw RuntimeFailure("HDF5 table: column '" + name + "' has " + std::to_string(length) +
                           " rows, others have " + std::to_string(rows));
    }
    rows = length;
    first = false;
  }
  return rows;
}

const std::vector<double>& ColumnTable::doubles(const std::string& name) const {
  return column_as<double>(*this, name, "float64");
}
const std::vector<std::int64_t>& ColumnTable::integers(const std::string& name) const {
  return column_as<std::int64_t>(*this, name, "int64");
}
const std::vector<std::string>& ColumnTable::strings(const std::string& name) const {
  return column_as<std::string>(*this, name, "string");
}

struct OutputFile::Image {
  H5::H5File file;
};

OutputFile::OutputFile(std::string file_path, bool truncate_file)
    : file_path_(std::move(file_path)), image_(std::make_unique<Image>()) {
  try {
    H5::Exception::dontPrint();
    // The core driver keeps the whole file in memory; without a backing store it never writes.
    H5::FileAccPropList access;
    access.setCore(1 << 20, false);
    const bool append = !truncate_file && std::filesystem::is_regular_file(file_path_);
    image_->file = H5::H5File(file_path_, append ? H5F_ACC_RDWR : H5F_ACC_TRUNC,
                              H5::FileCreatPropList::DEFAULT, access);
  } catch (const H5::Exception& error) {
    throw RuntimeFailure(file_path_ +
                         ": cannot open as HDF5 to add to it: " + error.getDetailMsg());
  }
}

OutputFile::~OutputFile() = default;

void OutputFile::write_table(const std::string& group_path, const ColumnTable& table) {
  table.rows();  // validates equal lengths before anything is written
  const std::string path = normalize(group_path);
  try {
    H5::Exception::dontPrint();
    H5::H5File& file = image_->file;
    if (path != "/" && link_exists(file, path))
      H5Ldelete(file.getId(), path.c_str(), H5P_DEFAULT);
    H5::Group group = ensure_group(file, path);
    for (const auto& [key, value] : table.attributes)
      write_string_attribute(group, key, value);
    std::vector<std::string> order = table.column_order;
    for (const auto& [name, column] : table.columns) {
      if (std::find(order.begin(), order.end(), name) == order.end())
        order.push_back(name);
    }
    write_string_attribute(group, "column_order", [&] {
      std::string joined;
      for (const auto& name : order) {
        if (!joined.empty())
          joined.push_back(',');
        joined.append(name);
      }
      return joined;
    }());
    for (const std::string& name : order) {
      const Column& column = table.columns.at(name);
      hsize_t length = column_length(column);
      H5::DataSpace space(1, &length);
      H5::DataSet dataset;
      if (const auto* doubles = std::get_if<std::vector<double>>(&column)) {
        dataset = group.createDataSet(name, H5::PredType::NATIVE_DOUBLE, space);
        if (length > 0)
          dataset.write(doubles->data(), H5::PredType::NATIVE_DOUBLE);
      } else if (const auto* integers = std::get_if<std::vector<std::int64_t>>(&column)) {
        dataset = group.createDataSet(name, H5::PredType::NATIVE_INT64, space);
        if (length > 0)
          dataset.write(integers->data(), H5::PredType::NATIVE_INT64);
      } else {
        const auto& strings = std::get<std::vector<std::string>>(column);
        H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
        type.setCset(H5T_CSET_UTF8);
        dataset = group.createDataSet(name, type, space);
        std::vector<const char*> pointers;
        pointers.reserve(strings.size());
        for (const auto& value : strings)
          pointers.push_back(value.c_str());
        if (length > 0)
          dataset.write(pointers.data(), type);
      }
      if (auto unit = table.units.find(name); unit != table.units.end()) {
        write_string_attribute(dataset, "units", unit->second);
      }
    }
  } catch (const H5::Exception& error) {
    throw RuntimeFailure(file_path_ + ": " + path + ": HDF5 write failed: " + error.getDetailMsg());
  }
}

void OutputFile::commit() {
  std::string bytes;
  try {
    H5::Exception::dontPrint();
    // The superblock's end-of-file address is brought up to date by a flush, not by
    // H5Fget_file_image alone.
    image_->file.flush(H5F_SCOPE_GLOBAL);
    const hid_t id = image_->file.getId();
    const ssize_t size = H5Fget_file_image(id, nullptr, 0);
    if (size < 0)
      throw RuntimeFailure(file_path_ + ": HDF5 could not serialize the file image");
    bytes.resize(static_cast<std::size_t>(size));
    if (H5Fget_file_image(id, bytes.data(), bytes.size()) != size)
      throw RuntimeFailure(file_path_ + ": HDF5 could not serialize the file image");
    image_->file.close();
  } catch (const H5::Exception& error) {
    throw RuntimeFailure(file_path_ + ": HDF5 write failed: " + error.getDetailMsg());
  }
  io::write_file_atomically(file_path_, bytes);
}

void check_appendable(const std::string& file_path) {
  if (!std::filesystem::is_regular_file(file_path))
    return;
  H5::Exception::dontPrint();
  if (H5Fis_hdf5(file_path.c_str()) <= 0) {
    throw InputError(file_path, "",
                     "exists and is not an HDF5 file; runs are added to HDF5 results files only");
  }
}

void write_table(const std::string& file_path, const std::string& group_path,
                 const ColumnTable& table, bool truncate_file) {
  OutputFile output(file_path, truncate_file);
  output.write_table(group_path, table);
  output.commit();
}

ColumnTable read_table(const std::string& file_path, const std::string& group_path) {
  const std::string path = normalize(group_path);
  if (!std::filesystem::exists(file_path))
    throw InputError(file_path, "", "no such file");
  ColumnTable table;
  try {
    H5::Exception::dontPrint();
    H5::H5File file(file_path, H5F_ACC_RDONLY);
    if (!link_exists(file, path))
      throw InputError(file_path, path, "no such group");
    H5::Group group = file.openGroup(path);
    std::vector<std::string> order;
    if (group.attrExists("column_order")) {
      std::string joined = read_string_attribute(group, "column_order");
      for (std::size_t start = 0; start <= joined.size();) {
        std::size_t comma = joined.find(',', start);
        if (comma == std::string::npos)
          comma = joined.size();
        if (comma > start)
          order.push_back(joined.substr(start, comma - start));
        start = comma + 1;
      }
    }
    for (int i = 0; i < group.getNumAttrs(); ++i) {
      H5::Attribute attribute = group.openAttribute(static_cast<unsigned>(i));
      std::string name = attribute.getName();
      if (name == "column_order" || attribute.getTypeClass() != H5T_STRING)
        continue;
      table.attributes[name] = read_string_attribute(group, name);
    }
    for (hsize_t i = 0; i < group.getNumObjs(); ++i) {
      std::string name = group.getObjnameByIdx(i);
      if (group.childObjType(name) != H5O_TYPE_DATASET)
        continue;
      if (std::find(order.begin(), order.end(), name) == order.end())
        order.push_back(name);
    }
    for (const std::string& name : order) {
      H5::DataSet dataset = group.openDataSet(name);
      hsize_t length = 0;
      H5::DataSpace space = dataset.getSpace();
      if (space.getSimpleExtentNdims() != 1) {
        throw InputError(file_path, path + "/" + name, "column is not one-dimensional");
      }
      space.getSimpleExtentDims(&length);
      H5T_class_t type_class = dataset.getTypeClass();
      Column column;
      if (type_class == H5T_FLOAT) {
        std::vector<double> values(length);
        if (length > 0)
          dataset.read(values.data(), H5::PredType::NATIVE_DOUBLE);
        column = std::move(values);
      } else if (type_class == H5T_INTEGER) {
        std::vector<std::int64_t> values(length);
        if (length > 0)
          dataset.read(values.data(), H5::PredType::NATIVE_INT64);
        column = std::move(values);
      } else if (type_class == H5T_STRING) {
        H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
        std::vector<char*> pointers(length, nullptr);
        if (length > 0)
          dataset.read(pointers.data(), type);
        std::vector<std::string> values;
        values.reserve(length);
        for (char* pointer : pointers)
          values.emplace_back(pointer ? pointer : "");
        if (length > 0)
          H5Dvlen_reclaim(type.getId(), space.getId(), H5P_DEFAULT, pointers.data());
        column = std::move(values);
      } else {
        throw InputError(file_path, path + "/" + name, "unsupported column type");
      }
      std::string unit;
      if (dataset.attrExists("units"))
        unit = read_string_attribute(dataset, "units");
      table.add(name, std::move(column), unit);
    }
  } catch (const H5::Exception& error) {
    throw InputError(file_path, path, "HDF5 read failed: " + error.getDetailMsg());
  }
  return table;
}

std::vector<std::string> list_groups(const std::string& file_path, const std::string& group_path) {
  std::vector<std::string> names;
  try {
    H5::Exception::dontPrint();
    H5::H5File file(file_path, H5F_ACC_RDONLY);
    H5::Group group = file.openGroup(normalize(group_path));
    for (hsize_t i = 0; i < group.getNumObjs(); ++i) {
      std::string name = group.getObjnameByIdx(i);
      if (group.childObjType(name) == H5O_TYPE_GROUP)
        names.push_back(name);
    }
  } catch (const H5::Exception& error) {
    throw InputError(file_path, group_path, "HDF5 read failed: " + error.getDetailMsg());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool group_exists(const std::string& file_path, const std::string& group_path) {
  if (!std::filesystem::exists(file_path))
    return false;
  try {
    H5::Exception::dontPrint();
    H5::H5File file(file_path, H5F_ACC_RDONLY);
    return link_exists(file, normalize(group_path));
  } catch (const H5::Exception&) {
    return false;
  }
}

}  // namespace perfsim::h5
