import MediaCore
import Testing

@Test func secondsOfARationalTime() {
    #expect(MediaTime(value: 3, timescale: 2).seconds == 1.5)
    #expect(MediaTime.invalid.seconds.isNaN)
}
