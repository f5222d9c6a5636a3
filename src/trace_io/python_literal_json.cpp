#include "trace_io/python_literal_json.hpp"

#include <cctype>

namespace perfsim::trace_io {
namespace {

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The bare word starting at `i` (True, None, inf, ...).
std::string_view word_at(std::string_view text, std::size_t i) {
  std::size_t end = i;
  while (end < text.size() && is_word_char(text[end]))
    ++end;
  return text.substr(i, end - i);
}

// Copies the Python string literal opening at text[i] as a JSON string; returns the index
// after its closing quote, or npos when it is not closed.
std::size_t copy_string(std::string_view text, std::size_t i, std::string& out) {
  const char quote = text[i];
  out.push_back('"');
  for (std::size_t j = i + 1; j < text.size(); ++j) {
    const char c = text[j];
    if (c == quote) {
      out.push_back('"');
      return j + 1;
    }
    if (c == '"') {  // only inside '...': JSON needs it escaped
      out += "\\\"";
      continue;
    }
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (j + 1 >= text.size())
      return std::string_view::npos;
    const char escaped = text[++j];
    if (escaped == '\'') {
      out.push_back('\'');
    } else if (escaped == 'x' && j + 2 < text.size()) {  // \xNN -> \u00NN
      out += "\\u00";
      out += text.substr(j + 1, 2);
      j += 2;
    } else {
      out.push_back('\\');
      out.push_back(escaped);
    }
  }
  return std::string_view::npos;
}

void drop_trailing_comma(std::string& out) {
  std::size_t end = out.size();
  while (end > 0 && out[end - 1] == ' ')
    --end;
  if (end > 0 && out[end - 1] == ',')
    out.resize(end - 1);
}

}  // namespace

std::optional<std::string> python_literal_to_json(std::string_view literal) {
  std::string out;
  out.reserve(literal.size());
  for (std::size_t i = 0; i < literal.size();) {
    const char c = literal[i];
    if (c == '\'' || c == '"') {
      i = copy_string(literal, i, out);
      if (i == std::string_view::npos)
        return std::nullopt;
      continue;
    }
    if (c == '(') {
      out.push_back('[');
    } else if (c == ')' || c == ']') {
      drop_trailing_comma(out);  // a one-element tuple prints as (x,)
      out.push_back(']');
    } else if (std::isalpha(static_cast<unsigned char>(c)) != 0) {
      const std::string_view word = word_at(literal, i);
      if (word == "True")
        out += "true";
      else if (word == "False")
        out += "false";
      else if (word == "None" || word == "nan" || word == "inf")
        out += "null";  // JSON has no NaN or infinity
      else
        out += word;  // left for the parser to reject
      i += word.size();
      continue;
    } else {
      out.push_back(c);
    }
    ++i;
  }
  return out;
}

}  // namespace perfsim::trace_io
