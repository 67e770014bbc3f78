"""The long tail: days that break routine (a conference trip with flights, a hike, a concert, a
museum, a birthday party). Each happens a handful of times or once in a person's weeks."""

from egohorizon.data.demo.grammar import a, activity, opt, rep, step, task

# --- a trip with flights ----------------------------------------------------------------------------
SUITCASE = a("fold clothes into my suitcase|roll up shirts for the suitcase|put my toiletries in the suitcase", "suitcase clothes",
             40, 110, place="bedroom")
CHECK_DOCS = a("check my passport and boarding pass|make sure I have my passport|check the flight time on my phone",
               "passport phone", 10, 30, screen="phone:ticket", place="bedroom")
step("pack_suitcase", "pack my suitcase|pack for the trip|get my luggage ready", [SUITCASE, SUITCASE, CHECK_DOCS],
     place="bedroom")
task("pack_trip", "pack for the trip to {city}|get ready for the trip|pack my bags for {city}",
     ["pack_suitcase", opt("pack_suitcase", 0.4)], place="bedroom")
activity("pack_for_trip", "pack for my trip to {city}|get ready to travel|pack my suitcase for {city}",
         ["pack_trip"], place="bedroom")

DROP_BAG = a("drop off my suitcase at the check-in desk|check in my bag|hand my suitcase over at the desk",
             "suitcase counter", 60, 150, speech="airport")
SECURITY = a("put my laptop in a tray at security|walk through the security scanner|queue at security",
             "tray laptop", 60, 150)
GATE = a("find my gate on the departure board|walk to gate {gate}|look at the departures screen", "departure_board",
         30, 90)
WAIT_GATE = a("wait at the gate|sit at the gate and look at the planes|wait for boarding to start", "window", 90, 180)
BOARDING = a("show my boarding pass and board|walk down the jet bridge|board the plane", "boarding_pass", 30, 90,
             screen="phone:ticket")
step("check_in", "check in for my flight|drop my bag and check in|check in at the airport", [DROP_BAG, opt(CHECK_DOCS, 0.4)],
     place="airport")
step("pass_security", "go through security|get through airport security|pass the security check", [SECURITY, SECURITY],
     place="airport", interruptible=False)
step("wait_board", "wait at the gate and board|board my flight|get on the plane", [GATE, WAIT_GATE, BOARDING],
     place="airport")
task("airport_departure", "get through the airport|check in and go through security|get to my gate",
     ["check_in", "pass_security"], place="airport")
task("boarding", "wait for my flight and board|board the plane to {city}|get on my flight",
     ["wait_board", opt("reply_to_message", 0.5)], place="airport")
activity("at_airport", "check in and board my flight to {city}|get through the airport and board|fly out of the airport",
         ["airport_departure", "boarding"], place="airport", slots={"gate": ("A12", "B7", "C22", "D4")})

SEAT = a("find my seat and stow my bag|put my bag in the overhead bin|sit down in my seat", "seat backpack", 30, 80)
TAKEOFF = a("look out of the window at takeoff|watch the city shrink below|look at the clouds", "window", 60, 150)
MOVIE = a("watch a film on the seat screen|watch a movie on the flight|pick a film to watch", "seat_screen", 120, 180,
          screen="laptop:video")
SNACK_PLANE = a("eat the snack from the flight attendant|drink a cup of tea on the plane|eat a sandwich on board",
                "tray cup", 60, 150)
LAND = a("fasten my seatbelt for landing|look out at {city} as we land|wait for the plane to park", "seatbelt window",
         60, 150)
step("settle_plane", "settle into my seat|get settled on the plane|find my seat", [SEAT, TAKEOFF], place="plane")
step("flight_time", "pass the time on the flight|watch a movie and eat|spend the flight reading and watching",
     [MOVIE, SNACK_PLANE, opt(MOVIE, 0.6)], place="plane")
step("landing", "land in {city}|get ready for landing|arrive in {city}", [LAND, LAND], place="plane")
task("fly_task", "sit through the flight to {city}|take the flight to {city}|spend the flight in my seat", ["settle_plane",
     rep("flight_time", 1, 3), "landing"], place="plane")
activity("flight", "fly to {city}|take a plane to {city}|travel by plane to {city}", ["fly_task"], place="plane",
         interruptible=False)

BAGGAGE = a("wait for my suitcase at baggage claim|pick up my suitcase from the belt|grab my bag off the carousel",
            "suitcase", 60, 150, place="airport")
TAXI = a("take a taxi to the hotel|ride in the taxi looking at {city}|tell the driver the hotel address", "taxi window",
         120, 180, place="taxi", speech="order")
HOTEL = a("check in at the hotel reception|get my room key|say my name at the reception", "key_card counter", 40, 100,
          place="hotel", speech="order")
ROOM = a("unpack in the hotel room|look out of the hotel window|drop my suitcase in the room", "suitcase bed", 40, 110,
         place="hotel room")
step("collect_bags", "collect my luggage|get my suitcase|pick up my bag", [BAGGAGE], place="airport")
step("to_hotel", "get to the hotel|take a taxi to my hotel|ride into {city}", [TAXI, TAXI], place="taxi")
step("check_into_hotel", "check in at the hotel|get my hotel room|settle into the hotel", [HOTEL, ROOM], place="hotel")
task("arrival", "arrive and get to the hotel in {city}|get from the airport to the hotel|arrive in {city}",
     ["collect_bags", "to_hotel", "check_into_hotel"], place="hotel")
activity("arrive_city", "arrive in {city} and check into the hotel|get settled in {city}|reach my hotel in {city}",
         ["arrival", opt("call_family", 0.5)], place="hotel")
task("home_arrival", "get home from the airport|arrive back home|get back to my flat",
     ["collect_bags", step("taxi_home", "take a taxi home|ride home|get home by taxi", [TAXI, a(
         "unlock the door and drop my suitcase|arrive home and put the bag down", "suitcase door", 15, 40,
         place="hallway")], place="taxi")], place="hallway")
activity("arrive_home", "get home from my trip|travel home from the airport|come home after the trip", ["home_arrival",
         opt("call_family", 0.4)], place="hallway")

KEYNOTE = a("listen to the keynote talk|watch the speaker's slides|listen to the talk on {topic}", "stage projector",
            120, 180, speech="talk")
NOTE_CONF = a("take notes on the talk|write down a paper to read|note an idea from the talk", "notebook pen", 20, 60)
POSTER = a("explain my poster to a visitor|answer a question at my poster|point at a plot on my poster", "poster",
           90, 180, speech="meeting")
MINGLE = a("talk with a researcher at the coffee break|swap contacts with someone|chat over coffee at the conference",
           "cup", 60, 150, speech="colleague")
step("watch_talk", "attend a talk|listen to a talk on {topic}|follow a session", [KEYNOTE, NOTE_CONF, KEYNOTE],
     place="conference hall")
step("poster_step", "present my poster|stand at my poster|talk people through my poster", [POSTER, POSTER],
     place="conference hall", interruptible=False)
step("networking", "network at the coffee break|meet people at the break|chat with researchers",
     [a("get a coffee at the conference|grab a coffee and a pastry|queue for coffee", "cup", 30, 80), MINGLE],
     place="conference hall")
task("talks", "attend talks at {conference}|listen to the morning talks|sit in on a session",
     [rep("watch_talk", 2, 3)], place="conference hall")
task("poster_session", "stand at my poster during the session|do the poster session|show my poster", [rep("poster_step",
     2, 3)], place="conference hall")
task("conf_break", "take a break at the conference|network over coffee|chat at the coffee break", ["networking",
     opt("networking", 0.5)], place="conference hall")
activity("conference_talks", "attend the talks at {conference}|follow the sessions at {conference}|go to talks",
         ["talks", "conf_break", "talks"], place="conference hall")
activity("conference_poster", "present my poster at {conference}|show my work at {conference}|do my poster session",
         ["poster_session", "conf_break"], place="conference hall")
OLD_TOWN = a("walk through the old town of {city}|look at the old buildings|take a photo of a church", "phone", 90, 180,
             place="old town", screen="phone:camera")
MAP = a("check the map on my phone|look for the way back on the map|find a restaurant on the map", "phone", 10, 30,
        place="old town", screen="phone:map")
step("explore", "explore the streets of {city}|wander around {city}|walk around the old town",
     [OLD_TOWN, opt(MAP, 0.6), OLD_TOWN], place="old town")
task("sightseeing", "go sightseeing in {city}|explore {city}|look around {city}", [rep("explore", 2, 3)],
     place="old town")
activity("explore_city", "explore {city} in the evening|walk around {city}|see the sights of {city}",
         ["sightseeing"], place="old town")

# --- a hike ----------------------------------------------------------------------------------------------
TRAIL = a("hike up the trail|walk uphill on the path|climb the rocky trail", "trail", 120, 180, place="mountain trail")
VIEW = a("stop and look at the view|take a photo of the valley|look down at the lake", "phone", 20, 60,
         place="mountain trail", screen="phone:camera")
PICNIC = a("eat a sandwich at the top|share snacks with {friend}|sit on a rock and eat", "sandwich", 90, 180,
           place="summit", speech="chat")
step("hike_up", "hike up towards {peak}|walk up the trail|climb towards the top", [TRAIL, opt(VIEW, 0.5), TRAIL],
     place="mountain trail", interruptible=False)
step("summit_break", "have a break at the top of {peak}|rest at the summit|enjoy the view from {peak}",
     [VIEW, PICNIC, opt(VIEW, 0.5)], place="summit")
task("ascent", "hike up {peak} with {friend}|climb {peak}|walk up to the top of {peak}", [rep("hike_up", 2, 4)],
     place="mountain trail")
task("summit", "rest at the top of {peak}|have lunch on {peak}|enjoy the summit", ["summit_break"], place="summit")
task("descent", "hike back down|walk down from {peak}|head back down the trail", [rep("hike_up", 2, 3)],
     place="mountain trail")
activity("hike_up_peak", "hike up {peak}|walk to the top of {peak}|do the climb up {peak}", ["ascent", "summit"],
         place="mountain trail")
activity("hike_down", "hike down from {peak}|walk back to the trailhead|descend from {peak}", ["descent"],
         place="mountain trail")

# --- a concert, a museum, a party ------------------------------------------------------------------------
QUEUE_IN = a("show my ticket at the entrance|queue to get in|scan the ticket on my phone", "phone", 60, 150,
             place="entrance", screen="phone:ticket")
DRINK_BAR = a("buy a drink at the bar|get two drinks at the bar|order a beer", "cup", 60, 120, speech="order")
SHOW = a("watch {band} play on stage|sing along with {band}|dance to {band}'s song", "stage", 120, 180,
         place="concert hall")
step("enter_venue", "get into the venue|show my ticket and go in|enter the {venue}", [QUEUE_IN, DRINK_BAR],
     place="entrance")
step("watch_set", "watch part of the show|watch the band|enjoy the music", [SHOW, SHOW, opt(SHOW, 0.5)],
     place="concert hall", interruptible=False)
task("arrive_show", "get into the {venue} with {friend}|arrive at the show|get a drink before the show",
     ["enter_venue"], place="entrance")
task("show_task", "watch {band} play|see {band} live|enjoy {band}'s show", [rep("watch_set", 2, 3)],
     place="concert hall")
activity("concert", "see {band} in concert with {friend}|go to {band}'s concert|watch {band} live with {friend}",
         ["arrive_show", "show_task", "show_task"], place="concert hall")

PAINTING = a("look at a painting by {artist}|read the label next to a painting|stand in front of a large canvas",
             "painting", 60, 150, place="museum")
TALK_ART = a("talk with {friend} about the painting|point out a detail to {friend}|discuss the exhibition with {friend}",
             "painting", 40, 100, place="museum", speech="chat")
step("gallery_room", "walk through a gallery room|look at the paintings in one room|see a room of the exhibition",
     [PAINTING, opt(TALK_ART, 0.6), PAINTING], place="museum")
task("exhibition", "see the {artist} exhibition|visit the {artist} exhibition|walk through the exhibition",
     [rep("gallery_room", 2, 4)], place="museum")
activity("museum", "visit the museum with {friend}|go to the {artist} exhibition|spend the afternoon at the museum",
         [task("museum_entry", "buy tickets and enter the museum|get into the museum|get our tickets",
               [step("museum_tickets", "buy museum tickets|get tickets at the desk|pay for the tickets",
                     [a("buy two tickets at the desk|pay for the museum tickets|get our tickets", "ticket counter",
                        30, 80, speech="order"), a("leave my jacket in the cloakroom|hand my coat in|check the coats",
                                                   "jacket", 20, 50)], place="museum")], place="museum"),
          "exhibition", "exhibition"], place="museum", slots={"artist": ("Monet", "Hilma af Klint", "Hokusai")})

GIFT = a("wrap the present for {friend}|write a birthday card for {friend}|tie a ribbon on the present", "present card",
         60, 150, place="living room")
GREET = a("say happy birthday to {friend}|hug {friend} and give the present|greet the guests", "present", 20, 60,
          place="friend's flat", speech="chat")
PARTY = a("chat with people at the party|talk with {friend}'s friends|laugh with the others at the party", "glass",
          90, 180, place="friend's flat", speech="chat")
CAKE = a("sing happy birthday|eat a slice of birthday cake|watch {friend} blow out the candles", "cake plate", 40, 100,
         place="friend's flat", speech="chat")
step("prepare_gift", "get the present ready|wrap a present for {friend}|prepare a gift", [GIFT, GIFT], place="living room")
step("party_talk", "socialise at the party|talk with the guests|mingle at the party", [PARTY, opt(PARTY, 0.6)],
     place="friend's flat")
task("gift", "prepare a present for {friend}|get {friend}'s gift ready|wrap {friend}'s birthday present",
     ["prepare_gift"], place="living room")
task("arrive_party", "arrive at {friend}'s party|greet {friend} at the party|get to the birthday party",
     [step("greet_step", "greet {friend} and the guests|say hello at the party|give {friend} the present",
           [GREET, PARTY], place="friend's flat")], place="friend's flat")
task("celebrate", "celebrate with the guests|party with friends|celebrate with {friend}",
     [rep("party_talk", 1, 3), step("cake_step", "have birthday cake|sing and eat cake|do the cake",
                                    [CAKE, CAKE], place="friend's flat")], place="friend's flat")
activity("birthday_party", "go to {friend}'s birthday party|celebrate {friend}'s birthday|party at {friend}'s place",
         ["arrive_party", "celebrate", opt("celebrate", 0.5)], place="friend's flat")
activity("birthday_gift", "get ready for {friend}'s birthday|prepare for the party|wrap {friend}'s present",
         ["gift"], place="living room")

