#include "agent/dashboard/assets.hpp"

namespace sg::agent {

const Asset* find_asset(std::string_view url) {
  if (url == "/" || url == "/index.html") url = "/index.html";
  for (const auto& asset : embedded_assets()) {
    if (asset.url == url) return &asset;
  }
  return nullptr;
}

}  // namespace sg::agent
