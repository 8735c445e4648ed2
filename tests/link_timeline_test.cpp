// A link port's timeline: the first free slot that fits, merged bookings, and
// ended bookings forgotten without touching live ones.
#include <catch2/catch.hpp>

#include <random>
#include <utility>
#include <vector>

#include "cohsim/fabric/link_timeline.hpp"

using cohsim::fabric::LinkTimeline;

TEST_CASE("a link timeline gives a message the first gap that fits and merges touching bookings", "[interconnect]") {
  LinkTimeline t;
  t.book(100, 10);
  t.book(130, 10);
  CHECK(t.earliest(0, 10) == 0);      // fits before the first booking
  CHECK(t.earliest(95, 10) == 110);   // overlaps the first: the gap after it fits
  CHECK(t.earliest(112, 20) == 140);  // the gap 110..130 is too short
  CHECK(t.earliest(200, 5) == 200);   // nothing booked after it
  t.book(110, 10);
  CHECK(t.bookings() == 2);  // joined the first
  t.book(120, 10);
  CHECK(t.bookings() == 1);  // joined both: one interval 100..140
  CHECK(t.earliest(100, 1) == 140);
  t.forget_before(139);
  CHECK(t.bookings() == 1);
  t.forget_before(140);
  CHECK(t.bookings() == 0);
}

TEST_CASE("a link timeline forgets ended bookings and never joins a new booking to one", "[interconnect]") {
  LinkTimeline t;
  for (cohsim::sim::Tick start : {0, 20, 40, 60, 80}) t.book(start, 10);
  t.forget_before(10);  // the first ended, exactly at the new booking's start
  CHECK(t.bookings() == 4);
  REQUIRE(t.earliest(10, 5) == 10);
  t.book(10, 5);
  CHECK(t.bookings() == 5);  // a booking of its own, not the ended one extended
  t.forget_before(50);
  CHECK(t.bookings() == 2);  // 60..70 and 80..90 live on
  CHECK(t.earliest(50, 10) == 50);
  CHECK(t.earliest(55, 10) == 70);
}

TEST_CASE("a link timeline books a message at its ready time only when nothing booked ends after it", "[interconnect]") {
  LinkTimeline t;
  CHECK(t.book_if_free(0, 100, 10));  // empty: booked at 100..110
  CHECK(t.earliest(100, 1) == 110);
  CHECK(t.book_if_free(0, 110, 10));  // touching the last: joined, 100..120
  CHECK(t.bookings() == 1);
  CHECK_FALSE(t.book_if_free(0, 115, 10));  // 100..120 ends after 115: nothing booked
  CHECK(t.bookings() == 1);
  CHECK(t.earliest(115, 10) == 120);
  CHECK_FALSE(t.book_if_free(0, 50, 10));  // a gap before a booking is earliest()'s to find, not this
  CHECK(t.earliest(50, 10) == 50);
  CHECK(t.book_if_free(120, 130, 5));  // 100..120 ended at now = 120: dropped, then 130..135 booked
  CHECK(t.bookings() == 1);
  CHECK(t.earliest(130, 1) == 135);
}

TEST_CASE("a link timeline agrees with every booking ever made on random traffic", "[interconnect]") {
  // The reference keeps every booking and finds the first slot by brute
  // force; the timeline forgets ended ones, merges touching ones and decides
  // "free from here" from the last booking's end alone. Time only moves on,
  // and a message is never ready before now, as in the interconnect.
  using Tick = cohsim::sim::Tick;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    LinkTimeline t;
    std::vector<std::pair<Tick, Tick>> all;
    auto reference = [&](Tick ready, Tick length) {
      Tick start = ready;
      for (bool moved = true; moved;) {
        moved = false;
        for (const auto& [b, e] : all)
          if (b < start + length && start < e) {
            start = e;
            moved = true;
          }
      }
      return start;
    };
    Tick now = 0;
    for (int i = 0; i < 400; ++i) {
      now += rng() % 3 == 0 ? rng() % 40 : 0;
      t.forget_before(now);
      const Tick ready = now + rng() % 60, length = 1 + rng() % 15;
      bool free = true;
      for (const auto& [b, e] : all) free = free && e <= ready;
      REQUIRE(t.free_from(ready) == free);
      const Tick start = t.earliest(ready, length);
      REQUIRE(start == reference(ready, length));
      t.book(start, length);
      all.push_back({start, start + length});
    }
  }
}
