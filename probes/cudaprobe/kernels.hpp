#pragma once
namespace cp {
// PTX for the probe kernels, JIT-compiled by the driver. ISA 6.0 / sm_50 loads on every
// driver from R470 on and on every GPU from Maxwell on; `cudaprobe ptx` prints it so that the
// tests can check it with ptxas.
extern const char* const kKernelsPtx;
}
