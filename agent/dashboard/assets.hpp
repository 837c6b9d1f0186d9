// The dashboard's static files (page, script, style, Chart.js from Debian's
// libjs-chart.js), embedded in the binary at build time: machines are offline and the
// server serves nothing from disk but these.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace sg::agent {

struct Asset {
  std::string_view url;  // exact request path, e.g. "/static/app.js"
  std::string_view content_type;
  std::string_view bytes;
};

const std::vector<Asset>& embedded_assets();

// The asset served at exactly `url`, or nullptr. No normalisation: anything that is not
// one of the embedded paths (e.g. "/../etc/passwd", "/static/../x") is not found.
const Asset* find_asset(std::string_view url);

}  // namespace sg::agent
