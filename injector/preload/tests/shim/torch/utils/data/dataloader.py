# SPDX-License-Identifier: Apache-2.0
class _BaseDataLoaderIter:
    def __init__(self, n):
        self.i, self.n = 0, n

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.i


class DataLoader:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return _BaseDataLoaderIter(self.n)
