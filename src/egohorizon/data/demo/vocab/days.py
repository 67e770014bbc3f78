"""Level 5: the parts of a day (a morning before work, a work block, an evening out) and the few
level-4 wrappers they need. Personas (``personas.py``) string these into weekday and weekend plans.

Episodes marked ``fill=True`` end at a clock time given by the plan: their last part is a pool that
is drawn from (never the same activity twice in a row) until that time, which is how a work morning
lasts until lunch whatever the person happened to do in it.
"""

from egohorizon.data.demo.grammar import activity, episode, opt, pick
from egohorizon.data.demo.vocab.home import DISHES

# --- level-4 wrappers ---------------------------------------------------------------------------------
activity("phone_call", "call {family} in the evening|have a long phone call with {family}|catch up with {family}",
         ["call_family", opt("phone_break", 0.3)], interruptible=False)
activity("commute_home", "travel back home|head home|make my way home",
         [opt("ride_podcast", 0.25), pick("cycle_trip", "tram_trip", "walk_trip", weights=(3, 2, 1))],
         place="street", interruptible=False, slots={"destination": ("my flat",)})
activity("commute_work", "travel to {workplace}|commute to {workplace}|make my way to {workplace}",
         [opt("ride_podcast", 0.25), pick("cycle_trip", "tram_trip", "walk_trip", weights=(3, 2, 1))],
         place="street", interruptible=False, slots={"destination": ("{workplace}",)})
activity("tram_ride", "travel to {destination}|get to {destination} by public transport|make my way to {destination}",
         ["tram_trip"], place="tram", interruptible=False)

# --- mornings and evenings -------------------------------------------------------------------------------
episode("morning_office", "get ready and go to {workplace}|weekday morning before work|start the work day",
        ["shower", "breakfast", "leave_home", "commute_work"], place="kitchen")
episode("morning_home_dog", "walk {dog} and have breakfast|morning at home with {dog}|start the day with {dog}",
        ["shower", "dog_walk", "breakfast"], place="kitchen")
episode("morning_weekend", "slow weekend morning at home|have a relaxed weekend morning|lazy morning at home",
        ["shower", "breakfast", opt("tidy_home", 0.3)], place="kitchen")
episode("dinner_home", "make and eat dinner at home|have dinner at home|cook and eat dinner",
        ["cook_dinner_home", "eat_dinner_home"], place="kitchen", slots={"dish": DISHES})
episode("go_to_bed", "end the day|finish the day and go to sleep|wind down and go to bed", ["brush_teeth", "bedtime"],
        place="bedroom")

# --- work ------------------------------------------------------------------------------------------------
WORK_POOL_RESEARCH = pick("coding", "experiments", "writing", "reading", "coffee_break", weights=(1, 1, 1, 1, 1))
episode("work_morning", "work on {project} in the morning|do research work in the morning|morning at {workplace}",
        ["start_workday", WORK_POOL_RESEARCH], fill=True)
episode("work_morning_meeting", "lab meeting and research in the morning|go to the group meeting and work|"
        "morning with the lab meeting", ["start_workday", "group_meeting", WORK_POOL_RESEARCH], fill=True)
episode("work_afternoon", "work on {project} in the afternoon|do research work in the afternoon|"
        "afternoon at {workplace}", [WORK_POOL_RESEARCH], fill=True)
WORK_POOL_DESIGN = pick("design_work", "client_call", "coffee_break", weights=(4, 1, 1))
episode("design_morning", "work on the {project} designs in the morning|morning of design work|design work before lunch",
        ["start_workday", WORK_POOL_DESIGN], fill=True)
episode("design_afternoon", "work on the {project} designs in the afternoon|afternoon of design work|"
        "design work in the afternoon", [WORK_POOL_DESIGN], fill=True)
episode("lunch_canteen", "have a lunch break with colleagues|take my lunch break|break for lunch",
        ["canteen_lunch", opt("coffee_break", 0.4)], place="canteen")
episode("lunch_desk", "have a quick lunch break|eat lunch and take a break|break for lunch at home",
        ["desk_lunch", opt("dog_walk", 0.5)], place="kitchen")

# --- after work and free time --------------------------------------------------------------------------------
episode("evening_run", "go running after work|evening run by the river|exercise in the evening",
        ["running", "shower"], place="riverside path")
episode("evening_climb", "spend the evening climbing with {friend}|head to the climbing gym with {friend}|climbing session with {friend}",
        ["tram_ride", "climbing", "commute_home"], place="climbing gym", slots={"destination": ("the climbing gym",)})
episode("run_after_work", "go home and run|head home and go for a run|run by the river after work",
        ["commute_home", "running", "shower"], place="riverside path")
episode("head_home", "head home after work|go home and tidy up|get home after work",
        ["commute_home", pick("tidy_home", "phone_call", "laundry", weights=(2, 1, 1))], place="street")
episode("city_day", "explore {city} for the day|spend the day sightseeing in {city}|spend a day out in {city}",
        ["explore_city", "museum", "explore_city"], place="old town")
episode("evening_yoga", "do yoga and relax|wind down with yoga|evening yoga at home", ["yoga", "dog_walk"],
        place="living room")
episode("shopping_trip", "get groceries for the week|do the food shopping|shop for the week",
        ["tram_ride", "groceries", "commute_home", "unpack_groceries"], place="supermarket",
        slots={"destination": ("the supermarket",)})
LEISURE_GUITAR = pick("guitar", "series", "reading_book", "gaming", "phone_call", weights=(3, 3, 2, 1, 1))
LEISURE_PIANO = pick("piano", "series", "reading_book", "gaming", "phone_call", "dog_walk", weights=(3, 2, 2, 2, 1, 1))
episode("evening_free_guitar", "relax in the evening|spend the evening at home|free evening at home",
        [LEISURE_GUITAR], fill=True, place="living room")
episode("evening_free_piano", "relax at home in the evening|quiet evening at home|free time in the evening",
        [LEISURE_PIANO], fill=True, place="living room")
episode("weekend_chores", "do the chores|take care of the flat|weekend chores at home",
        [pick("laundry", "clean_flat", "tidy_home", weights=(2, 2, 1))], fill=True, place="living room")
episode("weekend_free_guitar", "spend the afternoon on hobbies|relax on the weekend afternoon|free afternoon at home",
        [LEISURE_GUITAR], fill=True, place="living room")
episode("weekend_free_piano", "spend the afternoon at home|relax on a weekend afternoon|free afternoon with {dog}",
        [LEISURE_PIANO], fill=True, place="living room")
episode("weekend_lunch", "have a simple lunch at home|eat lunch at home|lunch and a break at home",
        ["desk_lunch", pick("tidy_home", "phone_call", "reading_book", weights=(2, 1, 1))], place="kitchen")
episode("coffee_with_friend", "meet {friend} for coffee in town|go out for coffee with {friend}|see {friend} at a café",
        ["tram_ride", "coffee_friend", "commute_home"], place="café", slots={"destination": ("the café",)})
episode("dinner_with_friend", "have an evening out with {friend}|dinner in town with {friend}|eat out with {friend}",
        ["tram_ride", "dinner_out", "commute_home"], place="restaurant", slots={"destination": ("the restaurant",)})

# --- the long tail -----------------------------------------------------------------------------------------
episode("trip_morning", "get ready for my trip to {city}|pack and leave for {city}|morning before the trip",
        ["shower", "breakfast", "pack_for_trip"], place="bedroom")
episode("fly_out", "travel to {city} by plane|head to {city}|make the journey to {city}",
        ["tram_ride", "at_airport", "flight", "arrive_city"], place="airport", slots={"destination": ("the airport",)})
episode("conference_day", "attend {conference} in {city}|spend the day at {conference}|go to {conference}",
        ["conference_talks", "conference_poster", "conference_talks"], place="conference hall")
episode("evening_abroad", "spend the evening in {city}|explore {city} and have dinner|evening out in {city}",
        ["explore_city", "dinner_out"], place="old town")
episode("fly_back", "fly back home from {trip_city}|travel home from {trip_city}|make the journey home",
        ["at_airport", "flight", "arrive_home"], place="airport")
episode("hike_day", "hike up {peak} with {friend}|go hiking with {friend}|spend the day hiking up {peak}",
        ["tram_ride", "hike_up_peak", "hike_down", "commute_home"], place="mountain trail",
        slots={"destination": ("the trailhead",)})
episode("concert_night", "see {band} in concert|go to a concert with {friend}|night out at {band}'s concert",
        ["tram_ride", "concert", "commute_home"], place="concert hall", slots={"destination": ("the {venue}",)})
episode("museum_visit", "spend a cultural afternoon with {friend}|take the afternoon off for a museum|go to an exhibition",
        ["tram_ride", "museum", "commute_home"], place="museum", slots={"destination": ("the museum",)})
episode("birthday_night", "celebrate {friend}'s birthday in the evening|spend the evening at {friend}'s party|party at {friend}'s",
        ["birthday_gift", "tram_ride", "birthday_party", "commute_home"], place="friend's flat",
        slots={"destination": ("{friend}'s place",)})
