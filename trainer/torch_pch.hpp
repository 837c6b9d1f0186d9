// Precompiled header for trainer/ and kernels/ C++ sources: LibTorch's headers are most
// of the compile time of every TU that includes them. Only stable, heavy headers here.
#pragma once
#include <torch/torch.h>
