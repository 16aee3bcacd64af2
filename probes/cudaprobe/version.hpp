#pragma once
namespace cp {
constexpr const char* kCudaprobeVersion = "0.1.0";
}
