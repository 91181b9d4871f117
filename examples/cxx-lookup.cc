// examples/cxx-lookup.cc - relhash from C++, through the same headers as
// from C.
//
// Shows: <relhash.h> compiled as C++ (extern "C"; the shared atomic
// fields are std::atomic here, _Atomic in C, and an object that embeds a
// relhash_node is built from its values, not copied); constexpr table
// parameters, so that relhash_lookup_fast()
// inlines the hash; an RAII guard for read-side critical sections;
// std::thread readers while the main thread replaces objects and hands
// the old ones to relhash_defer() with a lambda that deletes them.
//
// Exits 1 if a reader ever misses a key or sees a value that does not
// belong to it.
#include <relhash.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

struct Item {
	std::uint64_t key;
	std::uint64_t value; // always key * 1000 + the number of updates
	relhash_node node;
};

constexpr relhash_params params = {
	offsetof(Item, node), offsetof(Item, key), sizeof(std::uint64_t),
	nullptr, nullptr, nullptr, 0, 0, 0, 0, 0,
};

// Holds a read-side critical section for its lifetime.
class ReadSection {
public:
	ReadSection() { relhash_read_lock(); }
	~ReadSection() { relhash_read_unlock(); }
	ReadSection(const ReadSection &) = delete;
	ReadSection &operator=(const ReadSection &) = delete;
};

constexpr std::uint64_t kItems = 1000;
constexpr int kReaders = 2, kUpdates = 50000;

std::atomic<bool> done{false}, failed{false};
std::atomic<int> started{0};

void reader(relhash_table *t)
{
	started++;
	while (!done.load(std::memory_order_relaxed)) {
		for (std::uint64_t k = 0; k < kItems; k++) {
			ReadSection section;
			auto *it = static_cast<Item *>(relhash_lookup_fast(t, &k, params));
			if (!it || it->value / 1000 != k)
				failed = true;
		}
	}
}

} // namespace

int main()
{
	relhash_table *t = relhash_create(&params);
	std::vector<Item *> current(kItems);

	if (!t)
		return 1;
	for (std::uint64_t k = 0; k < kItems; k++) {
		current[k] = new Item{k, k * 1000, {}};
		if (relhash_insert(t, &current[k]->node) != 0)
			return 1;
	}

	std::vector<std::thread> readers;
	for (int i = 0; i < kReaders; i++)
		readers.emplace_back(reader, t);
	while (started < kReaders)
		; // update while every reader runs

	for (int i = 0; i < kUpdates; i++) {
		Item *old = current[i % kItems];
		// Not new Item(*old): the node (a std::atomic inside) is the
		// table's, and not copyable.
		Item *fresh = new Item{old->key, old->value + 1, {}};
		if (relhash_replace(t, &old->node, &fresh->node) != 0)
			return 1;
		current[i % kItems] = fresh;
		relhash_defer([](void *p) { delete static_cast<Item *>(p); }, old);
	}
	done = true;
	for (auto &th : readers)
		th.join();

	relhash_destroy(t, [](void *obj, void *) { delete static_cast<Item *>(obj); },
	                nullptr);
	relhash_barrier(); // the deferred deletes have run
	std::printf("cxx-lookup: %d readers, %d replacements: %s\n", kReaders,
	            kUpdates, failed ? "FAILED" : "every key found with its own value");
	return failed ? 1 : 0;
}
