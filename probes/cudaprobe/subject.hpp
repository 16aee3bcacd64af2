#pragma once
namespace cp {
// `cudaprobe subject --device N`: the memory probes' subject process (see subject.cpp).
int runSubject(int device);
}
