// Typed errors thrown by trainer library code and mapped to exit codes in main.cpp:
// BadInputError -> 2, out of memory -> 3, NonFiniteError -> 4, anything else -> crash.
#pragma once

#include <stdexcept>
#include <string>

#include "common/errors/typed_error.hpp"

namespace sg::trainer {

// Usage or bad input: bad flag, bad switch value, bad preset line.
using BadInputError = TypedError<struct BadInputErrorTag>;

// Loss or gradient norm not finite.
using NonFiniteError = TypedError<struct NonFiniteErrorTag>;

// True for allocator failures on any device (c10::OutOfMemoryError, "out of memory"
// messages from CUDA or the CPU allocator, std::bad_alloc).
bool is_out_of_memory(const std::exception& e);

}  // namespace sg::trainer
